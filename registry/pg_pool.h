// registry/pg_pool.h — a bounded pool of PostgreSQL connections (libpqxx 6.4).
//
// acquire() hands out a Lease (RAII: the connection goes back to the pool when
// the Lease dies). At most `size` connections exist; acquire() waits up to
// `checkout_timeout` for one and then returns kUnavailable. A connection found
// broken (the server restarted) is dropped and replaced by a fresh one on the
// next acquire, so the pool heals by itself once the server is back.
//
// Thread-safe. Connections are held through unique_ptr (pqxx 6.4 connections
// are not movable). Only registry/ code touches the pqxx::connection.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"

// Forward declaration matching libpqxx 6.x, where pqxx::connection is an
// alias, not a class (`class connection;` conflicts with <pqxx/connection>).
// With libpqxx 7 this becomes `class connection;`.
namespace pqxx {
class connect_direct;
template <typename CONNECTPOLICY>
class basic_connection_base;
using connection = basic_connection_base<connect_direct>;
}  // namespace pqxx

namespace tcl::registry {

struct PgPoolOptions {
  // libpq URL or key=value string. connect_timeout=3 is added when absent, so
  // acquire() fails fast while the server is down.
  std::string url;
  int size = 8;                                      // max open connections (at least 1)
  std::chrono::milliseconds checkout_timeout{5000};  // wait for a free connection
};

struct PgPoolStats {
  int size = 0;     // configured maximum
  int open = 0;     // connections currently open
  int in_use = 0;   // leased out right now
  int waiting = 0;  // callers blocked in acquire()
};

class PgPool {
 public:
  class Lease {
   public:
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();
    pqxx::connection& conn() { return *conn_; }
    // Marks the connection broken: it is closed instead of returned.
    void discard() { broken_ = true; }

   private:
    friend class PgPool;
    Lease(PgPool* pool, std::unique_ptr<pqxx::connection> conn);
    PgPool* pool_;
    std::unique_ptr<pqxx::connection> conn_;
    bool broken_ = false;
  };

  explicit PgPool(PgPoolOptions options);
  ~PgPool();
  PgPool(const PgPool&) = delete;
  PgPool& operator=(const PgPool&) = delete;

  // kUnavailable when the server cannot be reached or no connection frees up
  // within checkout_timeout. A Lease must not outlive its pool. A connection
  // that threw pqxx::broken_connection must be discard()ed; once one is found
  // dead, the idle ones are closed too (a server restart killed them all).
  Result<Lease> acquire() EXCLUDES(mu_);
  // Runs `SELECT 1`; OK when the database answers.
  Status ping();
  PgPoolStats stats() const EXCLUDES(mu_);
  const PgPoolOptions& options() const { return options_; }

 private:
  void release(std::unique_ptr<pqxx::connection> conn, bool broken) EXCLUDES(mu_);

  const PgPoolOptions options_;  // as given, except size is at least 1
  const std::string conninfo_;   // options_.url plus connect_timeout=3 when absent
  mutable core::Mutex mu_;
  core::CondVar cv_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_ GUARDED_BY(mu_);
  int open_ GUARDED_BY(mu_) = 0;
  int waiting_ GUARDED_BY(mu_) = 0;
};

}  // namespace tcl::registry
