#include "registry/alias_listener.h"

#include <pqxx/connection>
#include <pqxx/nontransaction>
#include <pqxx/notification>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <deque>
#include <thread>

#include "registry/pg_pool_internal.h"

namespace tcl::registry {
namespace {

using Clock = std::chrono::steady_clock;

// Adds `key=value` to a libpq URL or key=value string unless `key` is there.
void add_conninfo_default(std::string& conninfo, std::string_view key, std::string_view value) {
  if (conninfo.find(std::string(key) + "=") != std::string::npos) return;
  const bool is_uri = conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0;
  if (is_uri) {
    conninfo += conninfo.find('?') == std::string::npos ? '?' : '&';
  } else if (!conninfo.empty()) {
    conninfo += ' ';
  }
  conninfo.append(key).append("=").append(value);
}

// The trigger's payload: {"alias": "production", "version": 7}.
std::optional<AliasChange> parse_payload(const std::string& payload) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(payload, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const boost::json::object& o = v.as_object();
  const auto* alias = o.if_contains("alias");
  const auto* version = o.if_contains("version");
  if (alias == nullptr || !alias->is_string() || version == nullptr || !version->is_int64()) return std::nullopt;
  return AliasChange{std::string(alias->as_string()), version->as_int64()};
}

// Queues payloads; they are handed to the callbacks outside pqxx (which
// would swallow a callback's exception).
class Receiver final : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection& conn, std::deque<std::string>* out)
      : pqxx::notification_receiver(conn, std::string(kAliasChannel)), out_(out) {}
  void operator()(const std::string& payload, int /*backend_pid*/) override { out_->push_back(payload); }

 private:
  std::deque<std::string>* out_;
};

}  // namespace

struct AliasListener::Impl {
  AliasListenerOptions options;
  std::string conninfo;
  OnChange on_change;
  OnResync on_resync;
  // receiver is destroyed before conn (it unregisters from it).
  std::unique_ptr<pqxx::connection> conn;
  std::unique_ptr<Receiver> receiver;
  std::deque<std::string> pending;  // payloads not yet delivered
  bool need_resync = false;
  Status last_error = Status::unavailable("the alias listener has not connected yet");

  // Opens a connection and LISTENs; on success a resync is due (which
  // supersedes anything still queued from an earlier connection).
  Status connect() {
    std::unique_ptr<pqxx::connection> c;
    std::unique_ptr<Receiver> r;
    try {
      c = std::make_unique<pqxx::connection>(conninfo);
      r = std::make_unique<Receiver>(*c, &pending);  // sends LISTEN
      // pqxx swallows a broken connection during LISTEN: make sure it holds.
      {
        pqxx::nontransaction tx(*c);
        tx.exec1("SELECT 1");
      }
      if (!c->is_open()) throw pqxx::broken_connection("connection lost right after LISTEN");
    } catch (...) {
      bool lost = false;
      last_error = Status::unavailable(internal::status_from_current_exception("alias listener", &lost).message());
      if (c) c->disconnect();  // so that dropping the receiver sends nothing
      r.reset();
      return last_error;
    }
    pending.clear();
    conn = std::move(c);
    receiver = std::move(r);
    need_resync = true;
    return Status::ok();
  }

  // Forgets the connection without talking to the server (which may be gone):
  // disconnecting first keeps pqxx from sending UNLISTEN or reconnecting.
  void drop(const Status& why) {
    last_error = Status::unavailable(why.message());
    if (conn) conn->disconnect();
    receiver.reset();
    conn.reset();
  }

  // Runs the callbacks for a due resync and the queued payloads; returns the
  // number of changes delivered.
  int deliver() {
    int n = 0;
    if (need_resync) {
      if (on_resync) on_resync();
      need_resync = false;
    }
    while (!pending.empty()) {
      const std::string payload = std::move(pending.front());
      pending.pop_front();
      const auto change = parse_payload(payload);
      if (!change) {
        if (on_resync) on_resync();  // something changed; we cannot tell what
        continue;
      }
      on_change(*change);
      ++n;
    }
    return n;
  }
};

AliasListener::AliasListener(AliasListenerOptions options, OnChange on_change, OnResync on_resync)
    : impl_(std::make_unique<Impl>()) {
  impl_->conninfo = internal::with_connect_defaults(options.url);
  add_conninfo_default(impl_->conninfo, "keepalives_idle", "30");
  add_conninfo_default(impl_->conninfo, "keepalives_interval", "10");
  add_conninfo_default(impl_->conninfo, "keepalives_count", "3");
  impl_->options = std::move(options);
  impl_->on_change = std::move(on_change);
  impl_->on_resync = std::move(on_resync);
}

AliasListener::~AliasListener() {
  impl_->receiver.reset();
  impl_->conn.reset();
}

bool AliasListener::connected() const { return impl_->conn != nullptr; }

Result<int> AliasListener::wait(std::chrono::milliseconds timeout) {
  Impl& s = *impl_;
  const Clock::time_point deadline = Clock::now() + std::max(timeout, std::chrono::milliseconds(0));
  int delivered = s.deliver();  // left over from a callback that threw
  while (delivered == 0) {
    if (!s.conn) {
      // Reconnect at once after losing the connection, then every
      // reconnect_interval while the server stays away.
      if (Status st = s.connect(); !st) {
        const Clock::time_point now = Clock::now();
        if (now >= deadline) return st;
        std::this_thread::sleep_for(std::min<Clock::duration>(s.options.reconnect_interval, deadline - now));
        continue;
      }
      delivered += s.deliver();  // the resync
      continue;
    }
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        std::max<Clock::duration>(deadline - Clock::now(), Clock::duration::zero()));
    try {
      // await_notification would quietly reconnect a closed connection (and
      // we would miss the resync): check first.
      if (!s.conn->is_open()) throw pqxx::broken_connection("connection closed");
      s.conn->await_notification(static_cast<long>(left.count() / 1000000), static_cast<long>(left.count() % 1000000));
      if (!s.conn->is_open()) throw pqxx::broken_connection("connection closed");
    } catch (...) {
      bool lost = false;
      s.drop(internal::status_from_current_exception("alias listener", &lost));
      continue;
    }
    delivered += s.deliver();
    if (Clock::now() >= deadline) break;
  }
  return delivered;
}

}  // namespace tcl::registry
