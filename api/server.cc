#include "api/server.h"

#include <sys/socket.h>

#include <spdlog/spdlog.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "api/admission.h"
#include "api/auth.h"
#include "api/chunk_channel.h"
#include "api/http_error.h"
#include "api/rate_rules.h"
#include "core/mutex.h"

namespace tcl::api {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

std::string allow_header(const std::vector<http::verb>& verbs) {
  std::string s;
  for (http::verb v : verbs) {
    if (!s.empty()) s += ", ";
    s += std::string(http::to_string(v));
  }
  return s;
}

// Mozilla's "intermediate" TLS 1.2 suites (forward secrecy, AEAD only); TLS
// 1.3's suites all have both and stay OpenSSL's defaults.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305";

// A client's X-Request-Id is kept when it is short and plain (it goes into
// log lines and headers); otherwise tcld makes its own.
bool usable_request_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == ':';
  });
}

std::string new_request_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(rng()));
  return text;
}

std::string request_id_of(const http::request_header<>& head) {
  const std::string_view given = head["X-Request-Id"];
  return usable_request_id(given) ? std::string(given) : new_request_id();
}

std::string lower_trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Header framing that Beast accepts but we must not: two Host headers (400;
// which one names the resource?) and a Transfer-Encoding other than plain
// chunked (501; a coding we would not undo leaves the body's end ambiguous).
std::optional<Response> refuse_framing(const http::request_header<>& head) {
  const auto hosts = head.equal_range(http::field::host);
  if (std::distance(hosts.first, hosts.second) > 1) {
    return error_response(http::status::bad_request, "BAD_REQUEST", "the request has more than one Host header");
  }
  if (hosts.first == hosts.second && head.version() >= 11) {  // RFC 9112 §3.2: a server MUST answer 400
    return error_response(http::status::bad_request, "BAD_REQUEST", "an HTTP/1.1 request needs a Host header");
  }
  const auto auths = head.equal_range(http::field::authorization);
  if (std::distance(auths.first, auths.second) > 1) {  // which one is the caller?
    return error_response(http::status::bad_request, "BAD_REQUEST",
                          "the request has more than one Authorization header");
  }
  const auto codings = head.equal_range(http::field::transfer_encoding);
  for (auto it = codings.first; it != codings.second; ++it) {
    if (lower_trimmed(it->value()) != "chunked") {
      return error_response(http::status::not_implemented, "NOT_IMPLEMENTED",
                            "Transfer-Encoding '" + std::string(it->value()) +
                                "' is not supported; send the body with Content-Length or Transfer-Encoding: chunked");
    }
  }
  return std::nullopt;
}

// The path part of a request target: absolute-form ("http://host/path?q",
// what a client talking to a proxy sends) routes as its origin-form.
std::string_view origin_form(std::string_view target) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() >= scheme.size() && lower_trimmed(target.substr(0, scheme.size())) == scheme) {
      const std::size_t path = target.find_first_of("/?", scheme.size());
      if (path == std::string_view::npos) return "/";
      return target[path] == '/' ? target.substr(path) : std::string_view("/");
    }
  }
  return target;
}

bool expects_continue(const http::request_header<>& head) {
  return head.version() >= 11 && lower_trimmed(head[http::field::expect]) == "100-continue";
}

// A stream-slot share is per token presented, else per address.
std::string client_key(const http::request_header<>& head, const std::string& peer) {
  const auto token = parse_bearer(head[http::field::authorization]);
  return token ? "token " + std::string(*token) : "address " + peer;
}

// A body that ended in an HTTP framing error (bad chunk, ...) as opposed to
// a peer that went away or a timeout.
bool is_framing_error(beast::error_code ec) {
  return ec.category() == make_error_code(http::error::bad_chunk).category() && ec != http::error::partial_message &&
         ec != http::error::end_of_stream && ec != http::error::body_limit;
}

// JSON routes take application/json or a +json type; no Content-Type at all
// is read as JSON too (what most clients mean by a bare body).
bool json_content_type(std::string_view content_type) {
  if (content_type.empty()) return true;
  const std::string media = lower_trimmed(content_type.substr(0, content_type.find(';')));
  return media == "application/json" || (media.size() > 5 && media.ends_with("+json"));
}

template <class Rep, class Period>
Clock::duration to_clock(std::chrono::duration<Rep, Period> d) {
  return std::chrono::duration_cast<Clock::duration>(d);
}

// Part of a client's text (a path) fit to echo in an error: at most 200
// bytes, anything but printable ASCII as '?', so an answer is valid JSON
// and a log line stays one line.
std::string shown(std::string_view text) {
  constexpr std::size_t kMost = 200;
  std::string out;
  for (char c : text.substr(0, kMost)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > kMost) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace

std::string_view Request::header(std::string_view name) const {
  auto it = raw.find(name);
  return it == raw.end() ? std::string_view{} : std::string_view(it->value());
}

AdmissionLimits admission_limits(const ServerOptions& o) {
  AdmissionLimits l;
  l.max_connections = connections_that_fit(o.max_connections);
  l.max_connections_per_address = o.max_connections_per_address;
  l.max_streams_per_client = o.max_streams_per_client;
  l.auth_failures_per_window = o.auth_failures_per_window;
  return l;
}

struct Server::Impl {
  Impl(Server& s, ServerOptions o, const Router& r, Authenticator a, HttpMetrics& m)
      : self(s), options(std::move(o)), router(r), authenticate(std::move(a)), metrics(m),
        admission(admission_limits(options)), ioc(options.io_threads), acceptor(asio::make_strand(ioc)),
        accept_timer(acceptor.get_executor()), workers(options.worker_threads), probes(options.probe_threads),
        metrics_lane(options.metrics_threads), streams(options.max_streams), ssl_ctx(ssl::context::tls_server) {}

  void do_accept();
  void on_accept(beast::error_code ec, tcp::socket socket);
  void accept_after(std::chrono::milliseconds pause);
  void drain_tick();
  // Streamed bodies and answers in flight, so that the end of the drain can
  // fail them: a handler blocked on one returns (and rolls back) instead of
  // holding the process, its transaction and the upload lock forever.
  void track(const std::shared_ptr<ChunkChannel>& channel) EXCLUDES(channels_mu);
  void cancel_open_channels() EXCLUDES(channels_mu);

  Server& self;
  const ServerOptions options;
  const Router& router;
  Authenticator authenticate;
  HttpMetrics& metrics;
  // Before ioc: sessions still queued in ioc hold tickets of it when ioc is destroyed.
  Admission admission;
  asio::io_context ioc;
  tcp::acceptor acceptor;
  asio::steady_timer accept_timer;        // the pause before accepting again (on the acceptor's strand)
  Clock::time_point last_accept_warning;  // accept errors are logged at most once a second
  asio::thread_pool workers;              // Lane::kDefault
  asio::thread_pool probes;               // Lane::kProbe
  asio::thread_pool metrics_lane;         // Lane::kMetrics
  asio::thread_pool streams;              // Lane::kStream, at most max_streams tasks at once
  std::atomic<int> streams_in_use{0};
  ssl::context ssl_ctx;
  bool tls = false;
  std::atomic<int> in_flight{0};
  std::atomic<bool> stopped{false};
  Clock::time_point drain_deadline;
  std::unique_ptr<asio::steady_timer> drain_timer;
  core::Mutex channels_mu;
  std::vector<std::weak_ptr<ChunkChannel>> open_channels GUARDED_BY(channels_mu);
};

void Server::Impl::track(const std::shared_ptr<ChunkChannel>& channel) {
  core::MutexLock lock(channels_mu);
  std::erase_if(open_channels, [](const auto& c) { return c.expired(); });
  open_channels.push_back(channel);
}

void Server::Impl::cancel_open_channels() {
  std::vector<std::shared_ptr<ChunkChannel>> open;
  {
    core::MutexLock lock(channels_mu);
    for (const auto& c : open_channels)
      if (auto alive = c.lock()) open.push_back(std::move(alive));
    open_channels.clear();
  }
  for (const auto& c : open) c->close(Status::cancelled("tcld is shutting down"));
}

// Counts a request from its full header to its written answer.
class InFlight {
 public:
  explicit InFlight(Server::Impl& s) : s_(s) {
    s_.in_flight.fetch_add(1);
    s_.metrics.in_flight().Increment();
  }
  ~InFlight() {
    s_.metrics.in_flight().Decrement();
    s_.in_flight.fetch_sub(1);
  }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  Server::Impl& s_;
};

// One of the stream lane's max_streams slots, held by a request's handler
// (and its answer's producer) until both are done. take() is null when none
// is free: the request is answered 503 instead of queueing.
class StreamSlot {
 public:
  // `client`: client_key(); `over_share` is set when the client holds its share.
  static std::shared_ptr<StreamSlot> take(Server::Impl& s, const std::string& client, bool* over_share) {
    auto share = s.admission.admit_stream(client);
    *over_share = share == nullptr;
    if (!share) return nullptr;
    if (s.streams_in_use.fetch_add(1) >= s.options.max_streams) {
      s.streams_in_use.fetch_sub(1);
      return nullptr;
    }
    s.metrics.stream_slots_in_use().Increment();
    return std::shared_ptr<StreamSlot>(new StreamSlot(s, std::move(share)));
  }
  ~StreamSlot() {
    s_.metrics.stream_slots_in_use().Decrement();
    s_.streams_in_use.fetch_sub(1);
  }
  StreamSlot(const StreamSlot&) = delete;
  StreamSlot& operator=(const StreamSlot&) = delete;

 private:
  StreamSlot(Server::Impl& s, std::unique_ptr<Admission::Ticket> share) : s_(s), share_(std::move(share)) {}
  Server::Impl& s_;
  std::unique_ptr<Admission::Ticket> share_;
};

// One connection: read header → read body (whole, or streamed to the handler)
// → handle on the route's lane → write (whole, or streamed from the handler)
// → repeat. CRTP over the plain and the TLS stream, as in Beast's flex server.
// Every member below is touched only on the session's strand.
template <class Derived>
class Session {
 public:
  Session(Server::Impl& server, std::unique_ptr<Admission::Ticket> connection, std::string peer)
      : server_(server), connection_(std::move(connection)), peer_(std::move(peer)),
        buffer_(server.options.header_limit + kChunkBytes + kMetadataSlack) {
    server_.metrics.connections_open().Increment();
    // Beast calls this for each chunk-size line; extension bytes count against the body limit.
    on_chunk_header_ = [this](std::uint64_t, beast::string_view extensions, beast::error_code& ec) {
      chunk_metadata_ += extensions.size();
      if (chunk_metadata_ > limit_) ec = http::error::body_limit;
    };
  }
  ~Session() { server_.metrics.connections_open().Decrement(); }

 protected:
  static constexpr std::size_t kChunkBytes = 64 << 10;
  // Room in the read buffer beyond a header and a chunk: what a chunk-size
  // line, its extensions or the trailers may take. The buffer never grows
  // past it, so a line longer than that fails the body ("buffer overflow").
  static constexpr std::size_t kMetadataSlack = 4 << 10;

  // Where the request body stands; an answer goes out only from kNone/kDone,
  // or as the body's own error from kFailed.
  enum class Body { kNone, kReading, kDone, kFailed };

  Derived& derived() { return static_cast<Derived&>(*this); }
  auto& lowest() { return beast::get_lowest_layer(derived().stream()); }
  const ServerOptions& options() const { return server_.options; }

  void do_read() {
    header_parser_.emplace();
    header_parser_->header_limit(static_cast<std::uint32_t>(options().header_limit));
    // No limit yet: Beast would reject a large Content-Length while parsing the
    // header, before we know the route (and its limit) it is for.
    header_parser_->body_limit(boost::none);
    body_stream_.reset();
    slot_.reset();
    body_ = Body::kNone;
    body_error_.reset();
    pending_.reset();
    close_after_ = false;
    head_only_ = false;
    body_bytes_ = 0;
    body_paused_ = {};
    answer_bytes_ = 0;
    answer_active_ = {};
    lowest().expires_after(options().idle_timeout);
    cut_reason_ = "idle_timeout";
    http::async_read_header(derived().stream(), buffer_, *header_parser_,
                            beast::bind_front_handler(&Session::on_read_header, derived().shared_from_this()));
  }

  void on_read_header(beast::error_code ec, std::size_t) {
    if (ec) return fail_read(ec, header_parser_->get());
    in_flight_.emplace(server_);
    const auto& head = header_parser_->get();
    request_id_ = request_id_of(head);
    head_only_ = head.method() == http::verb::head;
    unread_body_ = !header_parser_->is_done();
    if (auto refused = refuse_framing(head)) return write_error(head, std::move(*refused));
    const RouteOptions route = server_.self.route_options_for(head.method(), head.target());
    lane_ = route.lane;
    stream_body_ = route.stream_body;
    limit_ = route.body_limit.value_or(options().default_body_limit);
    chunk_metadata_ = 0;
    if (auto len = header_parser_->content_length(); len && *len > limit_) {
      // Answer before reading a body we would refuse anyway, then close:
      // the unread body makes the connection unusable.
      return write_error(
          head, error_response(http::status::payload_too_large, "PAYLOAD_TOO_LARGE",
                               "request body of " + std::to_string(*len) + " bytes exceeds this route's limit of " +
                                   std::to_string(limit_) + " bytes"));
    }
    if (lane_ == Lane::kStream) {
      bool over_share = false;
      slot_ = StreamSlot::take(server_, client_key(head, peer_), &over_share);
      if (!slot_) return write_error(head, stream_lane_busy(over_share));
    }
    if (!unread_body_) return start_body();
    check_then_read_body(route.access == Access::kOpen);
  }

  Response stream_lane_busy(bool over_share) {
    server_.metrics.busy(over_share ? "stream_client_share" : "stream");
    Response busy =
        error_response(http::status::service_unavailable, "BUSY",
                       over_share ? "this client already holds " + std::to_string(options().max_streams_per_client) +
                                        " of the slots for streamed uploads and downloads; retry when one of them ends"
                                  : "all " + std::to_string(options().max_streams) +
                                        " slots for streamed uploads and downloads are taken; retry shortly");
    busy.headers["Retry-After"] = "1";
    return busy;
  }

  // Nothing of a body is read (or invited by 100 Continue) before the header
  // alone is found acceptable. The check may look a token up in the
  // database, so it runs on the route's own pool (a stream route holds its
  // slot, hence a thread of that pool), never on an I/O thread.
  void check_then_read_body(bool open_route) {
    auto self = derived().shared_from_this();
    auto head = std::make_shared<http::request_header<>>(header_parser_->get());
    auto check = [self, head] {
      auto refused = self->server_.self.check_before_body(*head, self->peer_);
      asio::dispatch(self->lowest().get_executor(), [self, head, refused = std::move(refused)]() mutable {
        if (refused) return self->write_error(*head, std::move(*refused));
        if (!expects_continue(*head)) return self->start_body();
        self->send_continue();
      });
    };
    if (open_route) return check();  // no token to look up: nothing blocks
    asio::post(lane_ == Lane::kStream ? server_.streams : server_.workers, std::move(check));
  }

  // "100 Continue": the client that asked for it sends its body only now.
  void send_continue() {
    auto res = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
    lowest().expires_after(options().write_timeout);
    http::async_write(derived().stream(), *res,
                      [self = derived().shared_from_this(), res](beast::error_code ec, std::size_t) {
                        if (ec) return self->end_dead_request();
                        self->start_body();
                      });
  }

  // The body (if any) is read: whole, then the handler; or streamed to a
  // handler that starts now.
  void start_body() {
    body_started_ = Clock::now();
    if (stream_body_) {
      body_stream_ = std::make_shared<ChunkChannel>(16);
      server_.track(body_stream_);
      auto req = std::make_shared<BeastRequest>();
      req->base() = header_parser_->get();
      if (header_parser_->is_done()) {  // no body at all: the handler sees an empty stream
        body_ = Body::kDone;
        body_stream_->close();
        return dispatch(req, body_stream_, std::move(slot_));
      }
      stream_parser_.emplace(std::move(*header_parser_));
      stream_parser_->body_limit(limit_);
      stream_parser_->on_chunk_header(on_chunk_header_);
      body_ = Body::kReading;
      dispatch(req, body_stream_, std::move(slot_));
      return read_chunk();
    }
    parser_.emplace(std::move(*header_parser_));
    parser_->body_limit(limit_);
    parser_->on_chunk_header(on_chunk_header_);
    if (parser_->is_done()) return body_done();
    body_ = Body::kReading;
    read_body_some();
  }

  void body_done() {
    body_ = Body::kDone;
    unread_body_ = false;
    dispatch(std::make_shared<BeastRequest>(parser_->release()), nullptr, std::move(slot_));
  }

  // Whole bodies: read piece by piece so that the rate rule sees progress.
  void read_body_some() {
    arm_read_deadline();
    http::async_read_some(derived().stream(), buffer_, *parser_,
                          beast::bind_front_handler(&Session::on_body_some, derived().shared_from_this()));
  }

  void on_body_some(beast::error_code ec, std::size_t bytes) {
    body_bytes_ += bytes;
    if (ec) return body_failed(ec);
    if (!parser_->is_done()) return read_body_some();
    body_done();
  }

  // Streamed bodies: read up to kChunkBytes, hand them over, repeat while
  // the handler keeps up (the channel bounds what is buffered).
  void read_chunk() {
    chunk_.resize(kChunkBytes);
    stream_parser_->get().body().data = chunk_.data();
    stream_parser_->get().body().size = chunk_.size();
    // Beast sizes each socket read by the buffer's free capacity (512 bytes
    // at first): a body read in 512-byte reads costs a third of the upload's
    // throughput, so give the buffer a chunk's room once.
    if (buffer_.capacity() < kChunkBytes) buffer_.reserve(kChunkBytes);
    arm_read_deadline();
    http::async_read_some(derived().stream(), buffer_, *stream_parser_,
                          beast::bind_front_handler(&Session::on_chunk, derived().shared_from_this()));
  }

  void on_chunk(beast::error_code ec, std::size_t) {
    if (ec == http::error::need_buffer) ec = {};
    chunk_.resize(chunk_.size() - stream_parser_->get().body().size);
    body_bytes_ += chunk_.size();
    if (ec) return body_failed(ec);
    if (!chunk_.empty()) body_stream_->push(std::move(chunk_));  // dropped when the handler is done
    chunk_ = std::string();
    if (stream_parser_->is_done()) {
      body_ = Body::kDone;
      unread_body_ = false;
      body_stream_->close();
      if (pending_) {
        auto p = std::move(*pending_);
        pending_.reset();
        write(std::move(p.response), p.keep_alive, p.version);
      }
      return;
    }
    auto self = derived().shared_from_this();
    pause_started_ = Clock::now();
    if (body_stream_->wait_for_space([self] {
          asio::post(beast::get_lowest_layer(self->stream()).get_executor(), [self] { self->resume_reading(); });
        })) {
      return;  // resumed when the handler has taken a chunk
    }
    read_chunk();
  }

  // Time the handler spent not taking chunks is not the client's.
  void resume_reading() {
    body_paused_ += Clock::now() - pause_started_;
    read_chunk();
  }

  // The body did not arrive whole: over its limit (413), malformed (400),
  // too slow (cut), or the peer went away. The first two are answered in
  // place of whatever the handler says, and the connection closes.
  void body_failed(beast::error_code ec) {
    body_ = Body::kFailed;
    slot_.reset();  // a whole body's slot: no handler will run
    Status cause;
    if (ec == http::error::body_limit) {
      const std::string why = "request body exceeds this route's limit of " + std::to_string(limit_) + " bytes";
      body_error_ = error_response(http::status::payload_too_large, "PAYLOAD_TOO_LARGE", why);
      cause = Status::resource_exhausted(why);
    } else if (ec == http::error::buffer_overflow) {
      const std::string why = "a chunk-size line, chunk extension or trailer section is longer than " +
                              std::to_string(buffer_.max_size()) + " bytes";
      body_error_ = error_response(http::status::bad_request, "BAD_REQUEST", why);
      cause = Status::invalid_argument(why);
    } else if (is_framing_error(ec)) {
      const std::string why = "malformed request body: " + ec.message();
      body_error_ = error_response(http::status::bad_request, "BAD_REQUEST", why);
      cause = Status::invalid_argument(why);
    } else if (ec == beast::error::timeout) {
      server_.metrics.connection_cut(cut_reason_);
      spdlog::info("http: request_id={} cut: the body arrived too slowly ({}, {} bytes)", request_id_, cut_reason_,
                   body_bytes_);
      cause = Status::cancelled(std::string("the client sent the body too slowly (") + cut_reason_ + ")");
    } else {
      cause = Status::cancelled("the client stopped sending the body (" + ec.message() + ")");
    }
    if (body_stream_) {
      body_stream_->close(cause);  // the handler stops reading
      if (!pending_) return;       // its answer comes to write(), which sends body_error_ instead
      pending_.reset();
    }
    write(Response{}, false, 11);  // sends body_error_, or ends the request when there is none
  }

  // Runs the handler on its lane; the answer comes back to the strand.
  void dispatch(const std::shared_ptr<BeastRequest>& req, std::shared_ptr<ChunkChannel> body,
                std::shared_ptr<StreamSlot> slot) {
    auto gone = std::make_shared<std::atomic<bool>>(false);
    if (!body && lane_ == Lane::kDefault) watch_client(gone);
    auto task = [self = derived().shared_from_this(), req, body, slot = std::move(slot), id = request_id_,
                 gone]() mutable { self->run_handler(*req, body, id, std::move(slot), gone.get()); };
    switch (lane_) {
      case Lane::kInline: return task();  // the route's handler never blocks
      case Lane::kProbe: return asio::post(server_.probes, std::move(task));
      case Lane::kMetrics: return asio::post(server_.metrics_lane, std::move(task));
      case Lane::kStream: return asio::post(server_.streams, std::move(task));
      case Lane::kDefault: return asio::post(server_.workers, std::move(task));
    }
  }

  // Sets `gone` when the peer closes while the handler runs: one wait for
  // the socket to turn readable, then a peek (nothing is consumed): EOF or a
  // reset is a client that left; bytes (a pipelined request, TLS data) are not.
  void watch_client(const std::shared_ptr<std::atomic<bool>>& gone) {
    lowest().socket().async_wait(
        tcp::socket::wait_read, [self = derived().shared_from_this(), gone](beast::error_code ec) {
          if (ec == asio::error::operation_aborted) return;
          char c = 0;
          const ssize_t n = ::recv(self->lowest().socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
          if (ec || n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) gone->store(true);
        });
  }

  // On the lane's thread. A stream slot is held until the handler (and the
  // answer's producer) is done, and freed before the client can see the end
  // of the answer, so a client that goes on at once finds it free.
  void run_handler(const BeastRequest& req, const std::shared_ptr<ChunkChannel>& body, const std::string& id,
                   std::shared_ptr<StreamSlot> slot, const std::atomic<bool>* gone) {
    auto res = std::make_shared<Response>(server_.self.handle(req, body.get(), id, peer_, gone));
    // The handler is done with the body: stop the session from buffering more.
    if (body) body->close(Status::cancelled("the handler finished before reading the whole body"));
    const bool keep_alive = req.keep_alive();
    const unsigned version = req.version();
    auto self = derived().shared_from_this();
    if (!res->stream || req.method() == http::verb::head) {
      slot.reset();
      asio::dispatch(beast::get_lowest_layer(stream()).get_executor(),
                     [self, res, keep_alive, version] { self->write(std::move(*res), keep_alive, version); });
      return;
    }
    auto out = std::make_shared<ChunkChannel>(8);
    server_.track(out);
    asio::dispatch(beast::get_lowest_layer(stream()).get_executor(),
                   [self, res, out, keep_alive, version] { self->write_stream(*res, out, keep_alive, version); });
    Status produced = res->stream(*out);  // produce on this thread; blocks while the client is slow
    slot.reset();
    out->close(std::move(produced));
  }
  auto& stream() { return derived().stream(); }

  void fail_read(beast::error_code ec, const http::request_header<>& head) {
    in_flight_.reset();
    if (ec == http::error::end_of_stream || ec == asio::error::eof) return derived().do_eof();
    if (ec == beast::error::timeout) {
      server_.metrics.connection_cut(cut_reason_);
      spdlog::debug("http: closing connection after {}", cut_reason_);
      return;  // the stream closed the socket already
    }
    if (ec == asio::error::operation_aborted) return;
    if (ec.category() == make_error_code(http::error::bad_target).category()) {
      // Malformed HTTP: answer 400 once, then close.
      in_flight_.emplace(server_);
      request_id_ = new_request_id();
      return write_error(
          head, error_response(http::status::bad_request, "BAD_REQUEST", "malformed HTTP request: " + ec.message()));
    }
    spdlog::debug("http: read failed: {}", ec.message());
  }

  // An answer the session gives itself (no handler ran), then close.
  void write_error(const http::request_header<>& head, Response r) {
    const std::string route = "(unrouted)";
    const std::string method(http::to_string(head.method()));
    const int code = static_cast<int>(r.status);
    server_.metrics.observe(route, method, code, 0.0);
    spdlog::info("http method={} route={} status={} request_id={} reason=\"{}\"", method, route, code, request_id_,
                 r.body.substr(0, r.body.find('\n')));
    close_after_ = true;
    body_ = Body::kNone;
    write(std::move(r), /*keep_alive=*/false, head.version() ? head.version() : 11);
  }

  template <class Message>
  void prepare(Message& h, const Response& r, bool keep_alive) {
    h.set(http::field::server, "tcld/" TCL_VERSION);
    h.set(http::field::content_type, r.content_type);
    h.set("X-Request-Id", request_id_);
    for (const auto& [k, v] : r.headers) h.set(k, v);
    // A body not read to its end (or read in error) makes the connection
    // unusable for the next request.
    h.keep_alive(keep_alive && !close_after_ && body_ != Body::kFailed && !server_.self.draining());
  }

  // Sends an answer once the request body allows: held while the body is
  // still arriving, replaced by the body's own error when it failed.
  void write(Response r, bool keep_alive, unsigned version) {
    if (body_ == Body::kReading) {
      // The handler answered before the body ended (a replayed upload, an
      // early error). Clients send the whole body before they read, so read
      // and drop the rest, then answer: the connection stays usable.
      pending_.emplace(PendingAnswer{std::move(r), keep_alive, version});
      return;
    }
    if (body_ == Body::kFailed) {
      if (!body_error_) return end_dead_request();
      r = std::move(*body_error_);
      body_error_.reset();
      keep_alive = false;
    }
    if (head_only_) return write_head(r, keep_alive, version);
    auto res = std::make_shared<http::response<http::string_body>>(r.status, version);
    prepare(*res, r, keep_alive);
    res->body() = std::move(r.body);
    res->prepare_payload();
    auto sr = std::make_shared<http::response_serializer<http::string_body>>(*res);
    sr->limit(kChunkBytes);
    write_piece(res, sr);
  }

  // A whole answer goes out a piece (kChunkBytes) at a time, each with its
  // own deadline, so the rate rule judges the client's average and a slow
  // but steady reader of a large answer is not cut by one write's timeout.
  void write_piece(std::shared_ptr<http::response<http::string_body>> res,
                   std::shared_ptr<http::response_serializer<http::string_body>> sr) {
    arm_write_deadline(kChunkBytes);
    http::async_write_some(derived().stream(), *sr,
                           [self = derived().shared_from_this(), res, sr](beast::error_code ec, std::size_t n) {
                             self->wrote(n);
                             if (ec || sr->is_done()) return self->on_write(ec, res->need_eof());
                             self->write_piece(res, sr);
                           });
  }

  // HEAD: the header GET would send (its Content-Length when the answer is
  // whole), no body.
  void write_head(const Response& r, bool keep_alive, unsigned version) {
    auto res = std::make_shared<http::response<http::empty_body>>(r.status, version);
    prepare(*res, r, keep_alive);
    if (!r.stream) res->content_length(r.body.size());
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    arm_write_deadline(0);
    http::async_write_header(derived().stream(), *sr,
                             [self = derived().shared_from_this(), res, sr](beast::error_code ec, std::size_t) {
                               self->on_write(ec, !res->keep_alive());
                             });
  }

  // Nobody is left to answer (the peer went away or was cut).
  void end_dead_request() {
    in_flight_.reset();
    beast::error_code ignored;
    lowest().socket().close(ignored);
  }

  // Streamed answers: the header, then one HTTP chunk per channel chunk,
  // then the last chunk — or a cut connection when the producer failed.
  void write_stream(const Response& r, std::shared_ptr<ChunkChannel> out, bool keep_alive, unsigned version) {
    out_ = std::move(out);
    stream_res_ = std::make_shared<http::response<http::empty_body>>(r.status, version);
    // HTTP/1.0 has no chunked encoding (RFC 9112 §6.1): the body ends with the connection.
    chunked_ = version >= 11;
    if (!chunked_) close_after_ = true;
    prepare(*stream_res_, r, keep_alive);
    stream_res_->chunked(chunked_);
    stream_sr_ = std::make_shared<http::response_serializer<http::empty_body>>(*stream_res_);
    arm_write_deadline(0);
    http::async_write_header(derived().stream(), *stream_sr_,
                             [self = derived().shared_from_this()](beast::error_code ec, std::size_t) {
                               if (ec) return self->abort_stream(ec);
                               self->pump();
                             });
  }

  void pump() {
    auto self = derived().shared_from_this();
    switch (out_->try_pop(&out_chunk_)) {
      case ChunkChannel::Pop::kChunk: {
        const std::size_t n = out_chunk_.size();
        arm_write_deadline(n);
        auto done = [self, n](beast::error_code ec, std::size_t) {
          self->wrote(n);
          if (ec) return self->abort_stream(ec);
          self->pump();
        };
        if (!chunked_) return asio::async_write(derived().stream(), asio::buffer(out_chunk_), std::move(done));
        asio::async_write(derived().stream(), http::make_chunk(asio::buffer(out_chunk_)), std::move(done));
        return;
      }
      case ChunkChannel::Pop::kEmpty:
        if (out_->wait_for_data([self] {
              asio::post(beast::get_lowest_layer(self->stream()).get_executor(), [self] { self->pump(); });
            })) {
          return;
        }
        return pump();
      case ChunkChannel::Pop::kEnd:
        if (!out_->status().is_ok()) {
          spdlog::warn("http: request_id={} streamed answer failed midway: {}", request_id_,
                       out_->status().to_string());
          return end_dead_request();
        }
        if (!chunked_) return on_write({}, true);
        arm_write_deadline(0);
        asio::async_write(derived().stream(), http::make_chunk_last(), [self](beast::error_code ec, std::size_t) {
          self->on_write(ec, !self->stream_res_->keep_alive());
        });
        return;
    }
  }

  void abort_stream(beast::error_code ec) {
    if (ec == beast::error::timeout) count_write_cut();
    spdlog::debug("http: streamed write failed: {}", ec.message());
    out_->close(Status::cancelled("client went away"));
    in_flight_.reset();
  }

  void on_write(beast::error_code ec, bool close) {
    in_flight_.reset();
    out_.reset();
    if (ec) {
      if (ec == beast::error::timeout) count_write_cut();
      spdlog::debug("http: write failed: {}", ec.message());
      return;
    }
    if (close) return unread_body_ ? derived().linger_close() : derived().do_eof();
    do_read();
  }

  // The rate rules (api/rate_rules.h).
  void arm_read_deadline() {
    const RateRule rule{options().min_request_body_rate, to_clock(options().min_rate_grace),
                        to_clock(options().read_timeout)};
    const RateDeadline d = read_deadline(rule, Clock::now(), body_started_ + body_paused_, body_bytes_);
    cut_reason_ = d.reason;
    lowest().expires_at(d.at);
  }

  void arm_write_deadline(std::size_t bytes) {
    const RateRule rule{options().min_response_rate, to_clock(options().min_rate_grace),
                        to_clock(options().write_timeout)};
    write_started_ = Clock::now();
    const RateDeadline d = write_deadline(rule, write_started_, answer_bytes_, answer_active_, bytes);
    cut_reason_ = d.reason;
    lowest().expires_at(d.at);
  }

  void wrote(std::size_t bytes) {
    answer_bytes_ += bytes;
    answer_active_ += Clock::now() - write_started_;
  }

  void count_write_cut() {
    server_.metrics.connection_cut(cut_reason_);
    spdlog::info("http: request_id={} cut: the answer was read too slowly ({}, {} bytes sent)", request_id_,
                 cut_reason_, answer_bytes_);
  }

  Server::Impl& server_;
  std::unique_ptr<Admission::Ticket> connection_;  // this connection's share of max_connections
  std::string peer_;                               // the client's address
  beast::flat_buffer buffer_;                      // bounded: header + chunk + kMetadataSlack
  std::optional<http::request_parser<http::empty_body>> header_parser_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::request_parser<http::buffer_body>> stream_parser_;
  std::shared_ptr<ChunkChannel> body_stream_;  // request body → handler (streamed routes)
  std::string chunk_;                          // the chunk being read
  Body body_ = Body::kNone;
  std::optional<Response> body_error_;  // a failed body's answer (400, 413); none: nobody to answer
  bool close_after_ = false;            // the answer ends the connection
  bool head_only_ = false;              // HEAD: the answer's header only
  Lane lane_ = Lane::kDefault;
  std::size_t limit_ = 0;             // the route's body limit
  bool stream_body_ = false;          // the route streams its body to the handler
  bool unread_body_ = false;          // the request has body bytes not yet read (close lingers)
  bool chunked_ = true;               // a streamed answer in chunks (HTTP/1.1), or ended by the close
  std::uint64_t chunk_metadata_ = 0;  // chunk-extension bytes of this body
  std::function<void(std::uint64_t, beast::string_view, beast::error_code&)> on_chunk_header_;
  std::shared_ptr<StreamSlot> slot_;  // held from the header to the dispatch of a whole body
  std::string request_id_;
  // Rate rules (arm_read_deadline, arm_write_deadline).
  Clock::time_point body_started_, pause_started_, write_started_;
  Clock::duration body_paused_{}, answer_active_{};
  std::uint64_t body_bytes_ = 0, answer_bytes_ = 0;
  const char* cut_reason_ = "idle_timeout";  // the rule behind the deadline now armed
  std::shared_ptr<ChunkChannel> out_;        // handler → response body (streamed answers)
  std::string out_chunk_;
  std::shared_ptr<http::response<http::empty_body>> stream_res_;
  std::shared_ptr<http::response_serializer<http::empty_body>> stream_sr_;
  struct PendingAnswer {
    Response response;
    bool keep_alive;
    unsigned version;
  };
  std::optional<PendingAnswer> pending_;  // an answer waiting for the body's end
  std::optional<InFlight> in_flight_;
};

class PlainSession : public Session<PlainSession>, public std::enable_shared_from_this<PlainSession> {
 public:
  PlainSession(Server::Impl& server, tcp::socket&& socket, std::unique_ptr<Admission::Ticket> ticket, std::string peer)
      : Session(server, std::move(ticket), std::move(peer)), stream_(std::move(socket)) {}
  void run() {
    asio::dispatch(stream_.get_executor(), beast::bind_front_handler(&PlainSession::do_read, shared_from_this()));
  }
  beast::tcp_stream& stream() { return stream_; }
  void do_eof() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }
  // nginx's lingering_close: after an answer that did not wait for the
  // body, read and drop what the client still sends (until it stops for
  // kLingerIdle, or kLingerMost in all) before closing. Closing at once
  // would make the kernel reset the connection, and the client would read
  // the reset instead of the answer.
  void linger_close() {
    do_eof();
    linger_end_ = Clock::now() + kLingerMost;
    linger_buffer_.resize(16 << 10);
    linger_read();
  }

 private:
  static constexpr auto kLingerIdle = std::chrono::seconds(2);
  static constexpr auto kLingerMost = std::chrono::seconds(10);
  void linger_read() {
    stream_.expires_at(std::min(Clock::now() + to_clock(kLingerIdle), linger_end_));
    stream_.async_read_some(asio::buffer(linger_buffer_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (!ec) return self->linger_read();
                              beast::error_code ignored;
                              self->stream_.socket().close(ignored);
                            });
  }

  friend class Session<PlainSession>;
  beast::tcp_stream stream_;
  Clock::time_point linger_end_;
  std::string linger_buffer_;
};

class TlsSession : public Session<TlsSession>, public std::enable_shared_from_this<TlsSession> {
 public:
  TlsSession(Server::Impl& server, tcp::socket&& socket, ssl::context& ctx, std::unique_ptr<Admission::Ticket> ticket,
             std::string peer)
      : Session(server, std::move(ticket), std::move(peer)), stream_(std::move(socket), ctx) {}
  void run() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      beast::get_lowest_layer(self->stream_).expires_after(self->server_.options.read_timeout);
      self->stream_.async_handshake(ssl::stream_base::server, [self](beast::error_code ec) {
        if (ec) {
          spdlog::debug("http: TLS handshake failed: {}", ec.message());
          return;
        }
        self->do_read();
      });
    });
  }
  beast::ssl_stream<beast::tcp_stream>& stream() { return stream_; }
  void do_eof() {
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(5));
    stream_.async_shutdown([self = shared_from_this()](beast::error_code) {});
  }
  void linger_close() { do_eof(); }  // TLS: the close_notify exchange, bounded by its timer

 private:
  friend class Session<TlsSession>;
  beast::ssl_stream<beast::tcp_stream> stream_;
};

void Server::Impl::do_accept() {
  acceptor.async_accept(asio::make_strand(ioc), beast::bind_front_handler(&Impl::on_accept, this));
}

// Accepting again at once after EMFILE (or at the connection cap) would
// spin: the pending connection stays in the backlog and fails again.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

void Server::Impl::accept_after(std::chrono::milliseconds pause) {
  accept_timer.expires_after(pause);
  accept_timer.async_wait([this](beast::error_code ec) {
    if (!ec && acceptor.is_open()) do_accept();
  });
}

void Server::Impl::on_accept(beast::error_code ec, tcp::socket socket) {
  if (ec) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    metrics.connection_refused("accept_error");
    if (Clock::now() - last_accept_warning > std::chrono::seconds(1)) {
      last_accept_warning = Clock::now();
      spdlog::warn("http: accept failed: {}; pausing {} ms", ec.message(), kAcceptPause.count());
    }
    return accept_after(kAcceptPause);
  }
  beast::error_code peer_ec;
  const auto peer = socket.remote_endpoint(peer_ec);
  Admission::Refusal why = Admission::Refusal::kNone;
  auto ticket = peer_ec ? nullptr : admission.admit_connection(peer.address().to_string(), &why);
  if (!ticket) {
    if (why != Admission::Refusal::kNone) {
      metrics.connection_refused(why == Admission::Refusal::kTotal ? "max_connections" : "max_connections_per_address");
    }
    socket.close(peer_ec);
    if (why == Admission::Refusal::kTotal) return accept_after(kAcceptPause);
    return do_accept();
  }
  if (tls) {
    std::make_shared<TlsSession>(*this, std::move(socket), ssl_ctx, std::move(ticket), peer.address().to_string())
        ->run();
  } else {
    std::make_shared<PlainSession>(*this, std::move(socket), std::move(ticket), peer.address().to_string())->run();
  }
  if (acceptor.is_open()) do_accept();
}

void Server::Impl::drain_tick() {
  if (in_flight.load() == 0 || Clock::now() >= drain_deadline) {
    if (in_flight.load() != 0) {
      spdlog::warn("http: grace period over with {} requests in flight; failing their streams and stopping",
                   in_flight.load());
    }
    cancel_open_channels();
    ioc.stop();
    return;
  }
  drain_timer->expires_after(std::chrono::milliseconds(20));
  drain_timer->async_wait([this](beast::error_code) { drain_tick(); });
}

Server::Server(ServerOptions options, const Router& router, Authenticator authenticate, HttpMetrics& metrics)
    : impl_(std::make_unique<Impl>(*this, std::move(options), router, std::move(authenticate), metrics)) {}

Server::~Server() {
  impl_->ioc.stop();
  impl_->workers.join();
  impl_->probes.join();
  impl_->metrics_lane.join();
  impl_->streams.join();
}

Status Server::start() {
  Impl& s = *impl_;
  if (!s.options.tls_cert_file.empty() || !s.options.tls_key_file.empty()) {
    if (s.options.tls_cert_file.empty() || s.options.tls_key_file.empty()) {
      return Status::invalid_argument("TLS needs both --tls-cert and --tls-key");
    }
    beast::error_code ec;
    s.ssl_ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                          ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    if (SSL_CTX_set_cipher_list(s.ssl_ctx.native_handle(), kTls12Ciphers) != 1) {
      return Status::internal("TLS: OpenSSL knows none of the configured cipher suites");
    }
    s.ssl_ctx.use_certificate_chain_file(s.options.tls_cert_file, ec);
    if (ec) return Status::invalid_argument("TLS certificate " + s.options.tls_cert_file + ": " + ec.message());
    s.ssl_ctx.use_private_key_file(s.options.tls_key_file, ssl::context::pem, ec);
    if (ec) return Status::invalid_argument("TLS key " + s.options.tls_key_file + ": " + ec.message());
    s.tls = true;
  }
  beast::error_code ec;
  const auto address = asio::ip::make_address(s.options.host, ec);
  if (ec) return Status::invalid_argument("listen address '" + s.options.host + "': " + ec.message());
  const tcp::endpoint endpoint(address, s.options.port);
  const std::string where = s.options.host + ":" + std::to_string(s.options.port);
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::unavailable("cannot listen on " + where + ": " + ec.message());
  bound_port_ = s.acceptor.local_endpoint().port();
  s.do_accept();
  spdlog::info("http: listening on {}://{}:{}", s.tls ? "https" : "http", s.options.host, bound_port_.load());
  return Status::ok();
}

void Server::run() {
  Impl& s = *impl_;
  std::vector<std::thread> threads;
  for (int i = 1; i < s.options.io_threads; ++i) threads.emplace_back([&s] { s.ioc.run(); });
  s.ioc.run();
  for (auto& t : threads) t.join();
  s.workers.join();
  s.probes.join();
  s.metrics_lane.join();
  s.streams.join();
}

void Server::shutdown() {
  if (draining_.exchange(true)) return;
  Impl& s = *impl_;
  asio::post(s.acceptor.get_executor(), [&s] {
    beast::error_code ec;
    s.accept_timer.cancel();
    s.acceptor.close(ec);
    spdlog::info("http: draining {} in-flight requests (grace {} ms)", s.in_flight.load(),
                 s.options.shutdown_grace.count());
    s.drain_deadline = Clock::now() + s.options.shutdown_grace;
    s.drain_timer = std::make_unique<asio::steady_timer>(s.ioc);
    s.drain_tick();
  });
}

RouteOptions Server::route_options_for(http::verb method, std::string_view target) const {
  target = origin_form(target);
  const std::string_view path = target.substr(0, target.find('?'));
  const RouteMatch m = impl_->router.match(method, path);
  return m.route != nullptr ? m.route->options : RouteOptions{};
}

std::optional<Response> Server::check_before_body(const http::request_header<>& head, const std::string& peer) {
  const std::string_view target = origin_form(head.target());
  const std::string_view path = target.substr(0, target.find('?'));
  const RouteMatch m = impl_->router.match(head.method(), path);
  if (m.route == nullptr) return std::nullopt;  // 404/405 come from handle(), with the body read and dropped
  std::optional<registry::TokenInfo> principal;
  if (auto refused = authorize(*m.route, head[http::field::authorization], peer, &principal)) return refused;
  const RouteOptions& o = m.route->options;
  if (o.json_body && !o.stream_body && !json_content_type(head[http::field::content_type])) {
    return error_response(http::status::unsupported_media_type, "UNSUPPORTED_MEDIA_TYPE",
                          "this route takes a JSON body (Content-Type: application/json), not '" +
                              shown(head[http::field::content_type]) + "'",
                          boost::json::object{{"header", "Content-Type"}});
  }
  return std::nullopt;
}

Response Server::handle(const BeastRequest& raw, ChunkChannel* body, std::string_view request_id,
                        const std::string& peer, const std::atomic<bool>* client_gone) {
  Impl& s = *impl_;
  const auto started = Clock::now();
  const std::string id = request_id.empty() ? new_request_id() : std::string(request_id);
  const std::string_view target = origin_form(raw.target());
  const std::size_t q = target.find('?');
  Request req{raw, target.substr(0, q), {}, {}, "(unrouted)", std::nullopt, body, id, client_gone};
  if (q != std::string_view::npos) req.query = parse_query(target.substr(q + 1));

  Response res;
  const RouteMatch m = s.router.match(raw.method(), req.path);
  if (m.route == nullptr && !m.allowed.empty()) {
    res = error_response(http::status::method_not_allowed, "METHOD_NOT_ALLOWED",
                         shown(raw.method_string()) + " is not allowed on " + shown(req.path));
    res.headers["Allow"] = allow_header(m.allowed);
  } else if (m.route == nullptr) {
    res = error_response(http::status::not_found, "NOT_FOUND", "no route for " + shown(req.path));
  } else {
    req.route = m.route->path_template;
    req.path_params = m.params;
    res = authorize_and_call(*m.route, req, peer);
  }
  res.headers["X-Request-Id"] = id;
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  const int code = static_cast<int>(res.status);
  const std::string method(raw.method_string());
  s.metrics.observe(std::string(req.route), method, code, seconds);
  if (code >= 500) {
    spdlog::error("http method={} route={} status={} duration_ms={:.3f} request_id={} error=\"{}\"", method,
                  std::string(req.route), code, seconds * 1e3, id, res.log_cause);
  } else {
    spdlog::info("http method={} route={} status={} duration_ms={:.3f} request_id={}", method, std::string(req.route),
                 code, seconds * 1e3, id);
  }
  return res;
}

std::optional<Response> Server::authorize(const Route& route, std::string_view authorization, const std::string& peer,
                                          std::optional<registry::TokenInfo>* principal) {
  Impl& s = *impl_;
  const Access access = route.options.access;
  if (access == Access::kOpen) return std::nullopt;
  const auto now = Admission::Clock::now();
  std::chrono::milliseconds retry_after{};
  if (!peer.empty() && s.admission.auth_throttled(peer, now, &retry_after)) {
    s.metrics.auth_throttled();
    Response r = error_response(http::status::too_many_requests, "TOO_MANY_REQUESTS",
                                "too many requests with a bad token from this address; retry later");
    r.headers["Retry-After"] = std::to_string(std::max<long long>(1, (retry_after.count() + 999) / 1000));
    return r;
  }
  const auto token = parse_bearer(authorization);
  if (!token) {
    return error_response(Status::unauthenticated("this route needs a bearer token (Authorization: Bearer ...)"));
  }
  auto who = s.authenticate(*token);
  if (!who) {
    if (who.status().code() == StatusCode::kUnauthenticated && !peer.empty()) s.admission.auth_failed(peer, now);
    return error_response(who.status());
  }
  if (!scope_allows(access, who->scope)) {
    return error_response(Status::permission_denied("token '" + who->name + "' has scope " +
                                                    std::string(registry::scope_name(who->scope)) +
                                                    "; this route needs " + std::string(access_name(access))));
  }
  *principal = *who;
  return std::nullopt;
}

Response Server::authorize_and_call(const Route& route, Request& req, const std::string& peer) {
  if (auto refused = authorize(route, req.header("Authorization"), peer, &req.principal)) return std::move(*refused);
  if (route.options.json_body && !route.options.stream_body && !req.body().empty() &&
      !json_content_type(req.header("Content-Type"))) {
    return error_response(http::status::unsupported_media_type, "UNSUPPORTED_MEDIA_TYPE",
                          "this route takes a JSON body (Content-Type: application/json), not '" +
                              shown(req.header("Content-Type")) + "'",
                          boost::json::object{{"header", "Content-Type"}});
  }
  try {
    return route.handler(req);
  } catch (const std::exception& e) {
    return error_response(Status::internal(std::string("handler threw: ") + e.what()));
  }
}

}  // namespace tcl::api
