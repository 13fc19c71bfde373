// registry/upload_copy.cc — how an upload's rows and keys reach the server:
// binary COPY straight through libpq (libpqxx 6 has none), in a savepoint
// when a unique index may reject it, and the array literals of the bind
// parameters that ask about keys (upload_writer_internal.h).
#include <libpq-fe.h>
#include <pqxx/largeobject>
#include <pqxx/pqxx>

#include <algorithm>
#include <memory>
#include <string>

#include "registry/copy_codec.h"
#include "registry/upload_writer_internal.h"

namespace tcl::registry::internal {
namespace {

// The libpq connection under a transaction. libpqxx 6 has no binary COPY
// and no public accessor; largeobject offers one to its subclasses.
struct RawConnection : pqxx::largeobject {
  static PGconn* of(const pqxx::dbtransaction& tx) { return raw_connection(tx); }
};

using PGresultPtr = std::unique_ptr<PGresult, void (*)(PGresult*)>;

// Throws the libpqxx exception for a failed command: broken_connection when
// the connection is gone, else sql_error (unique_violation for 23505) with
// the SQLSTATE, which status_from_current_exception() maps.
[[noreturn]] void throw_copy_error(PGconn* conn, const PGresult* result, const char* command) {
  const std::string message = result != nullptr ? PQresultErrorMessage(result) : PQerrorMessage(conn);
  if (PQstatus(conn) != CONNECTION_OK) throw pqxx::broken_connection(message);
  const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  if (state != nullptr && std::string_view(state) == "23505") throw pqxx::unique_violation(message, command, state);
  throw pqxx::sql_error(message, command, state);
}

}  // namespace

void copy_binary(pqxx::dbtransaction& tx, const char* command, std::string_view tuples) {
  if (tuples.empty()) return;
  PGconn* conn = RawConnection::of(tx);
  {
    PGresultPtr started(PQexec(conn, command), PQclear);
    if (PQresultStatus(started.get()) != PGRES_COPY_IN) {
      while (PGresult* more = PQgetResult(conn)) PQclear(more);
      throw_copy_error(conn, started.get(), command);
    }
  }
  constexpr std::size_t kPiece = 1u << 20;
  bool sent = PQputCopyData(conn, kCopyHeader.data(), static_cast<int>(kCopyHeader.size())) == 1;
  while (sent && !tuples.empty()) {
    const std::size_t n = std::min(tuples.size(), kPiece);
    sent = PQputCopyData(conn, tuples.data(), static_cast<int>(n)) == 1;
    tuples.remove_prefix(n);
  }
  sent = sent && PQputCopyData(conn, kCopyTrailer.data(), static_cast<int>(kCopyTrailer.size())) == 1;
  if (PQputCopyEnd(conn, sent ? nullptr : "tcld could not send the rows") != 1) {
    throw_copy_error(conn, nullptr, command);
  }
  PGresultPtr failed(nullptr, PQclear);
  while (PGresult* r = PQgetResult(conn)) {
    if (PQresultStatus(r) != PGRES_COMMAND_OK && failed == nullptr) {
      failed.reset(r);
    } else {
      PQclear(r);
    }
  }
  if (failed != nullptr) throw_copy_error(conn, failed.get(), command);
  if (!sent) throw_copy_error(conn, nullptr, command);
}

// Plain SQL savepoints: a pqxx::subtransaction only issues SAVEPOINT when a
// command goes through it, and the COPY does not.
bool copy_in_savepoint(pqxx::dbtransaction& tx, const char* command, std::string_view tuples) {
  tx.exec0("SAVEPOINT tcl_upload_slice");
  try {
    copy_binary(tx, command, tuples);
  } catch (const pqxx::unique_violation&) {
    tx.exec0("ROLLBACK TO SAVEPOINT tcl_upload_slice; RELEASE SAVEPOINT tcl_upload_slice");
    return false;
  }
  tx.exec0("RELEASE SAVEPOINT tcl_upload_slice");
  return true;
}

void append_hex(std::string& out, const std::uint8_t* data, std::size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(kHex[data[i] >> 4]);
    out.push_back(kHex[data[i] & 15]);
  }
}

void append_array_element(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    if (c == '\\' || c == '"') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
}

bool uuid_to_key(std::string_view text, DedupKey* key) {
  std::size_t n = 0;
  for (const char c : text) {
    if (c == '-') continue;
    if (n == 32) return false;
    const int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) return false;
    (*key)[n / 2] = static_cast<std::uint8_t>(n % 2 == 0 ? v << 4 : (*key)[n / 2] | v);
    ++n;
  }
  return n == 32;
}

}  // namespace tcl::registry::internal
