// registry/upload_store.h — measurement and candidate uploads (tables
// uploads, tasks, programs, measurements, candidates).
//
// An upload is all-or-nothing: an UploadWriter holds one connection and one
// transaction from begin() to commit(); every row it writes is in that
// transaction, so a writer destroyed without commit() rolls back, and a
// client that disconnects or a daemon that dies mid-upload leaves no rows.
//
// Streaming: add() formats each row into a slice (a few thousand rows) in
// the caller's thread; full slices go to a background thread of the writer
// that writes them into the tables (binary COPY) while the caller keeps
// parsing, so PostgreSQL works during the upload instead of after it.
// Repeats inside a slice are dropped first; rows and programs stored
// before (in this or earlier uploads) are rejected by the tables' unique
// indexes, the slice's COPY is rolled back to a savepoint and the slice
// asks which of its keys are stored, then writes the others.
//
// Concurrency: writing rows into the tables needs the *upload lock*, a
// transaction-level advisory lock shared by all platforms: its holder is the
// only transaction inserting into tasks, programs, measurements or
// candidates, so deduplication cannot race and two uploads never wait for
// each other's rows (no deadlock). While the body streams, a writer's slices
// go to a temporary staging table and no lock is taken; commit() waits for
// the lock and moves them into the tables (the last, partial slice straight
// in). So concurrent uploads stream at full speed, their commits run one at
// a time, and an upload's commit waits only for other commits, never for an
// upload that is still streaming (a slow client holds no lock; issue 45,
// finding 5).
//
// Idempotency: an upload is recorded with its Idempotency-Key (if any) and
// the SHA-256 of its body. find_previous() returns the stored report of an
// earlier upload with the same key, or — when no key is given — the same body
// hash, kind and platform; commit() does the same check again under the
// lock so two concurrent retries insert once (the loser gets the winner's
// report back, with `replayed` set). A key is unique per platform (schema):
// reusing it with another body or for the other kind is
// kFailedPrecondition, never a replay.
//
// Integrity: the bulk tables have no foreign keys (migrations/0004): this
// writer inserts each row's task and program, and the upload row, in the
// transaction of the rows, so no row is ever committed without them.
//
// Platform counts: the writer keeps table platform_counts (and the
// membership tables under it, migrations/0007) in the upload's transaction:
// each slice's new rows make their programs and tasks the platform's, and
// commit() adds the upload's new rows, holding the upload lock. So a
// rolled-back, killed or replayed upload adds nothing, and concurrent
// uploads add one after the other (PlatformStore::get reads them).
//
// Dedup keys: a measurement is a duplicate of a stored one with the same
// (platform, program, timestamp, costs), compared through a 16-byte hash
// (the same bytes as SQL tcl_measurement_dedup_key); a candidate, of one with
// the same (platform, program).
//
// Row order: stored rows get ids in add() order, and the first of two equal
// rows (the table's dedup key) is the one kept.
//
// Thread-safety: UploadStore is thread-safe; an UploadWriter belongs to one
// thread (its background thread is internal). Neither owns the pool; it must
// outlive them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "registry/pg_pool.h"

namespace tcl::registry {

enum class UploadKind { kMeasurements, kCandidates };
std::string_view upload_kind_name(UploadKind k);  // "measurements" | "candidates" (as in SQL)

// One accepted line, already parsed and checked by the caller.
struct UploadRow {
  std::string program_id;    // core::program_id (64 hex)
  std::string workload_key;  // core::canonical_workload_key
  std::string record;        // the original line, byte-exact, without '\n'
  // Measurements only (ignored for candidates):
  std::vector<double> costs;
  std::int32_t error_no = 0;
  double all_cost = 0;
  std::int64_t timestamp = 0;
};

struct UploadCounts {
  std::int64_t staged = 0;      // rows given to add()
  std::int64_t inserted = 0;    // new rows stored
  std::int64_t failed = 0;      // of inserted, failed measurements
  std::int64_t duplicates = 0;  // staged - inserted (already stored, or twice in this upload)
};

struct CommittedUpload {
  std::int64_t upload_id = 0;
  // The stored report: make_report's JSON as the database renders jsonb (the
  // same bytes for the first answer and every replay), or the earlier one.
  std::string report_json;
  bool replayed = false;  // true: an earlier upload with the same key/body won; nothing was inserted
};

class UploadWriter {
 public:
  ~UploadWriter();  // rolls back unless committed
  UploadWriter(const UploadWriter&) = delete;
  UploadWriter& operator=(const UploadWriter&) = delete;

  // Queues one row (copied). Errors are those of writing an earlier slice:
  // kUnavailable (connection lost), kInvalidArgument (a row breaks a schema
  // rule, see commit()) or kInternal; after an error the writer is dead and
  // every later call returns that error. Rows are written a slice at a
  // time, so a failure may only show at a later add() or at commit().
  // May block while the previous slice is still being written.
  Status add(const UploadRow& row);
  // Writes the rows still queued, records the upload with
  // make_report(upload_id, counts) as its report (must be JSON), commits.
  // `idempotency_key` may be empty; `body_sha256` is 64 lower-case hex.
  // OK: stored (replayed = false), or an earlier upload with this key/body
  // won (replayed = true; nothing of ours is stored, make_report not called).
  // Errors, after which nothing is stored: kUnavailable (connection lost,
  // or lost during COMMIT with the outcome unknown: retry with the same key),
  // kFailedPrecondition (key reused, see above; or already committed),
  // kInvalidArgument (a row or the report breaks a schema rule, e.g. a bad
  // program id or a workload key over 2000 bytes: the caller validates),
  // kInternal. May wait for the upload lock (see the top of this file).
  // Call at most once.
  Result<CommittedUpload> commit(
      std::string_view idempotency_key, std::string_view body_sha256,
      const std::function<std::string(std::int64_t upload_id, const UploadCounts&)>& make_report);

 private:
  friend class UploadStore;
  struct Impl;
  explicit UploadWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A stored record streamed back by for_each_record().
struct StoredRecord {
  std::string program_id;
  std::string record;  // the line as uploaded
};

class UploadStore {
 public:
  explicit UploadStore(PgPool& pool) : pool_(pool) {}

  // The report of an earlier upload with this key (or, when the key is empty,
  // this body hash) on this platform and kind, with replayed = true; nullopt
  // when none. kFailedPrecondition when the key was used for the other kind,
  // or with another body; `body_sha256` may be empty when the body is not
  // read yet, and then only the key is compared (commit() compares both).
  // With neither key nor hash: nullopt. kUnavailable when the database is down.
  Result<std::optional<CommittedUpload>> find_previous(std::int64_t platform_id, UploadKind kind,
                                                       std::string_view idempotency_key, std::string_view body_sha256);
  // Opens a transaction and reserves the upload's id; the writer holds one
  // pool connection (and, while it writes, one thread) until it is
  // destroyed. kUnavailable when the pool has no connection for us.
  Result<std::unique_ptr<UploadWriter>> begin(std::int64_t platform_id, UploadKind kind);

  // Calls `sink` for every stored row of the platform, oldest first, reading
  // through a server-side cursor in batches of `batch` rows so memory stays
  // bounded. A sink returning false stops early (OK). Measurements include
  // failed ones. The sink runs inside one read transaction (one snapshot)
  // that holds a pool connection until the call returns. kInvalidArgument
  // when batch < 1; kUnavailable when the database is down (a connection
  // lost after rows were delivered is reported, not retried).
  Status for_each_record(std::int64_t platform_id, UploadKind kind,
                         const std::function<bool(const StoredRecord&)>& sink, int batch = 2000);

 private:
  PgPool& pool_;
};

}  // namespace tcl::registry
