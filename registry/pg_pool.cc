#include "registry/pg_pool.h"

#include <pqxx/connection>
#include <pqxx/nontransaction>

#include <algorithm>
#include <string>
#include <utility>

#include "registry/pg_pool_internal.h"

namespace tcl::registry {

PgPool::Lease::Lease(PgPool* pool, std::unique_ptr<pqxx::connection> conn) : pool_(pool), conn_(std::move(conn)) {}

PgPool::Lease::Lease(Lease&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)), conn_(std::move(other.conn_)), broken_(other.broken_) {}

PgPool::Lease::~Lease() {
  if (pool_ != nullptr && conn_ != nullptr) pool_->release(std::move(conn_), broken_);
}

PgPool::PgPool(PgPoolOptions options)
    : options_([&] {
        options.size = std::max(options.size, 1);
        return std::move(options);
      }()),
      conninfo_(internal::with_connect_defaults(options_.url)) {}

PgPool::~PgPool() = default;

Result<PgPool::Lease> PgPool::acquire() {
  {
    core::MutexLock lock(mu_);
    const auto deadline = std::chrono::steady_clock::now() + options_.checkout_timeout;
    while (idle_.empty() && open_ >= options_.size) {
      ++waiting_;
      const bool woke = cv_.wait_until(mu_, deadline);
      --waiting_;
      if (!woke && idle_.empty() && open_ >= options_.size) {
        return Status::unavailable("no database connection free within " +
                                   std::to_string(options_.checkout_timeout.count()) + " ms (all " +
                                   std::to_string(options_.size) + " in use)");
      }
    }
    if (!idle_.empty()) {
      std::unique_ptr<pqxx::connection> conn = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(conn));
    }
    // Open a new connection outside the lock; the slot is reserved by open_.
    ++open_;
  }
  std::unique_ptr<pqxx::connection> conn;
  Status failure;
  try {
    conn = std::make_unique<pqxx::connection>(conninfo_);
    // NOTICEs ("relation exists, skipping") would go to stderr otherwise.
    pqxx::nontransaction tx(*conn);
    tx.exec0("SET client_min_messages TO warning");
  } catch (...) {
    bool lost = false;
    failure = internal::status_from_current_exception("connecting to the database", &lost);
    if (failure.code() != StatusCode::kUnavailable) failure = Status::unavailable(failure.message());
  }
  if (!failure.is_ok()) {
    conn.reset();
    {
      core::MutexLock lock(mu_);
      --open_;
    }
    cv_.notify_one();
    return failure;
  }
  return Lease(this, std::move(conn));
}

void PgPool::release(std::unique_ptr<pqxx::connection> conn, bool broken) {
  if (!broken && conn->is_open()) {
    {
      core::MutexLock lock(mu_);
      idle_.push_back(std::move(conn));
    }
    cv_.notify_one();
    return;
  }
  // A dead connection usually means the server restarted, which killed the
  // idle ones too: drop them all rather than hand each out to fail once.
  std::vector<std::unique_ptr<pqxx::connection>> dropped;
  {
    core::MutexLock lock(mu_);
    dropped.swap(idle_);
    open_ -= 1 + static_cast<int>(dropped.size());
  }
  conn.reset();
  dropped.clear();  // closes outside the lock
  cv_.notify_all();
}

Status PgPool::ping() {
  return internal::with_connection(*this, "ping", [](pqxx::connection& conn) -> Status {
    pqxx::nontransaction tx(conn);
    tx.exec1("SELECT 1");
    return Status::ok();
  });
}

PgPoolStats PgPool::stats() const {
  core::MutexLock lock(mu_);
  PgPoolStats s;
  s.size = options_.size;
  s.open = open_;
  s.in_use = open_ - static_cast<int>(idle_.size());
  s.waiting = waiting_;
  return s;
}

}  // namespace tcl::registry
