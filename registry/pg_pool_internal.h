// registry/pg_pool_internal.h — running pqxx code against a PgPool and turning
// pqxx exceptions into Status. For registry/ .cc files only: nothing outside
// registry/ may include pqxx (STYLE "Rules for TCL").
//
// Exception → Status (status_from_current_exception):
//   broken_connection, SQLSTATE 08xxx / 57P0x  → kUnavailable, connection lost
//   in_doubt_error (commit outcome unknown)      → kUnavailable, connection lost
//   unique_violation (23505)                     → kAlreadyExists
//   other integrity (23xxx) and data (22xxx)     → kInvalidArgument
//   serialization / deadlock (40xxx), 57014      → kUnavailable (retry later)
//   anything else                                → kInternal
// Thread-safety: free functions; safe from any thread.
#pragma once

#include <pqxx/pqxx>

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/status.h"
#include "registry/pg_pool.h"

namespace tcl::registry::internal {

// Call only inside a catch block: maps the exception in flight to a non-OK
// Status prefixed with `what`. Sets *connection_lost when the connection can
// no longer be used (the caller must discard it).
Status status_from_current_exception(std::string_view what, bool* connection_lost);

// Adds connect_timeout=3 (unless given) and fallback_application_name=tcld to
// a libpq URL or key=value string.
std::string with_connect_defaults(const std::string& url);

// Runs `body(pqxx::connection&)` on a leased connection. `body` returns Status
// or Result<T>; that is returned as is. A pqxx exception becomes a Status
// (see above). When the connection turns out to be dead (the server restarted
// since it was opened), it is discarded and `body` runs once more on a fresh
// connection: `body` may therefore run twice, and must not have effects outside
// the database that a second run would repeat. A transaction in progress on a
// connection that died was rolled back by the server, so retrying it is safe;
// a failed COMMIT (in_doubt_error) is never retried. With `may_retry`, the
// second run also waits for may_retry() to say yes (e.g. "nothing was handed
// on yet"): the one retry rule of registry/.
template <typename Body, typename MayRetry>
auto with_connection(PgPool& pool, std::string_view what, Body&& body, MayRetry&& may_retry)
    -> std::invoke_result_t<Body&, pqxx::connection&> {
  using R = std::invoke_result_t<Body&, pqxx::connection&>;
  for (int attempt = 0;; ++attempt) {
    auto lease = pool.acquire();
    if (!lease) return R(lease.status().with_context(what));
    bool lost = false;
    bool in_doubt = false;
    Status failure;
    try {
      return body(lease->conn());
    } catch (const pqxx::in_doubt_error&) {
      in_doubt = true;
      failure = status_from_current_exception(what, &lost);
    } catch (...) {
      failure = status_from_current_exception(what, &lost);
    }
    if (lost || !lease->conn().is_open()) {
      lost = true;
      lease->discard();
    }
    if (!lost || in_doubt || attempt > 0 || !may_retry()) return R(failure);
  }
}

template <typename Body>
auto with_connection(PgPool& pool, std::string_view what, Body&& body)
    -> std::invoke_result_t<Body&, pqxx::connection&> {
  return with_connection(pool, what, std::forward<Body>(body), [] { return true; });
}

// Runs `body(pqxx::work&)` in one transaction (READ COMMITTED) and commits
// when it returns OK; otherwise the transaction is rolled back. Same error
// handling and retry rule as with_connection().
template <typename Body>
auto with_transaction(PgPool& pool, std::string_view what, Body&& body) -> std::invoke_result_t<Body&, pqxx::work&> {
  using R = std::invoke_result_t<Body&, pqxx::work&>;
  return with_connection(pool, what, [&body](pqxx::connection& conn) -> R {
    pqxx::work tx(conn);
    R r = body(tx);
    if (r.is_ok()) tx.commit();
    return r;
  });
}

}  // namespace tcl::registry::internal
