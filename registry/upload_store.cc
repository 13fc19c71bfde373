#include "registry/upload_store.h"

#include <libpq-fe.h>
#include <pqxx/largeobject>
#include <pqxx/pqxx>

#include <array>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <span>
#include <stdexcept>
#include <system_error>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/record.h"
#include "core/sha256.h"
#include "registry/copy_codec.h"
#include "registry/pg_pool_internal.h"

namespace tcl::registry {
namespace {

using internal::begin_tuple;
using internal::double_bits;
using internal::field_bytes;
using internal::field_float8;
using internal::field_float8_array;
using internal::field_int4;
using internal::field_int8;
using internal::put_be64;

// ---------------------------------------------------------------------------
// How an upload is written (see upload_store.h for the contract).
//
// add() formats each row as a line of COPY text for its table (measurements
// or candidates) into a Slice, in the caller's thread. A full slice goes to
// the writer's thread, which writes it while the caller fills the next one
// (at most one slice waits, so memory stays at ~3 slices: ~15 MB). Every
// full slice is COPied into a temporary staging table (stage), without the
// upload lock; commit() takes the lock, moves the staged rows with INSERT ...
// SELECT ... ON CONFLICT (move_staged), and writes the last, partial slice
// straight into the tables (write_direct):
//   1. repeats within the slice are dropped (a hash set; first one wins);
//   2. new tasks (once per upload and workload key: cached), then the
//      slice's programs, then its rows, each with one COPY. Rows or programs
//      stored before make a unique index reject the COPY, which runs in a
//      savepoint: it is rolled back and the slice asks which of its keys
//      are stored (one index probe each) before writing the others; later
//      slices keep asking first until one finds nothing stored.
//   3. the platform's counts (migrations/0007): a new program is stored
//      with the platform as its first (programs.first_platform_id) and
//      counts as new to it; one that another platform stored first gets a
//      platform_programs row (COPY, or ON CONFLICT as above); the tasks of
//      both go into platform_tasks (ON CONFLICT), which tells how many
//      tasks are new to the platform.
// commit() adds the upload's totals to platform_counts. Slices used to be
// written straight in once a try of the lock succeeded; but the lock, once
// taken, is held to the commit, so one slow upload stalled every other
// upload's commit for its whole life (issue 45, finding 5).
//
// Measured (PostgreSQL backend CPU, 50k real x86 records of new programs,
// into small tables): COPY straight into measurements 0.46 s, against 0.23 s
// COPY into staging + 0.41 s INSERT ... SELECT ON CONFLICT; programs 0.15 s
// by COPY, 0.31 s by INSERT ... SELECT. Asking first costs ~2-3 us a row for
// a dedup key, ~5 us for a program id in a large table.
// Slice size: a few round trips per slice, so a slice is large; but the
// server idles until the first one is full, so that one is small.
constexpr std::size_t kSliceRows = 4096;
constexpr std::size_t kFirstSliceRows = 256;
constexpr std::size_t kSliceBytes = 4u << 20;

// The upload lock: a transaction-level advisory lock in the two-int key
// space, apart from the one-bigint key of the migrations lock.
constexpr std::int32_t kUploadLockClass = 0x54434c55;  // "TCLU"
constexpr std::int32_t kUploadLockObject = 1;

using DedupKey = std::array<std::uint8_t, 16>;

struct DedupKeyHash {
  std::size_t operator()(const DedupKey& k) const {
    std::size_t h;  // the key is a hash already
    std::memcpy(&h, k.data(), sizeof h);
    return h;
  }
};

// Rows go in with COPY's binary format: nothing to escape or print in tcld,
// and nothing to scan or parse in the server (numbers, the float8[] costs
// and the uuid key arrive as bytes). Against the text format: ~2-3 us a row
// less server CPU (~15%), and a cheaper add(). The columns of the tuples
// add() writes, in order:
constexpr const char* kCopyMeasurements =
    "COPY measurements (platform_id, program_id, upload_id, costs, error_no, all_cost, timestamp, dedup_key, record) "
    "FROM STDIN (FORMAT binary)";
constexpr const char* kCopyCandidates =
    "COPY candidates (platform_id, program_id, upload_id, record) FROM STDIN (FORMAT binary)";
constexpr const char* kCopyPrograms = "COPY programs (id, task_id, first_platform_id) FROM STDIN (FORMAT binary)";

// The staging table: the columns of add()'s tuples plus the workload key.
// It lives in the writer's transaction only (ON COMMIT DROP), so each
// connection has at most one and the name never clashes; it is created the
// first time a slice has to wait for the lock. Row order: the INSERTs below
// read it with a plain sequential scan, which returns a heap in insertion
// order (a temporary table is never scanned in parallel nor with
// synchronized scans), so stored ids follow add() order (tested).
constexpr const char* kCreateMeasurementStaging =
    "CREATE TEMP TABLE tcl_upload_staging ("
    "platform_id bigint NOT NULL, program_id text NOT NULL, upload_id bigint NOT NULL, costs float8[] NOT NULL, "
    "error_no integer NOT NULL, all_cost float8 NOT NULL, timestamp bigint NOT NULL, dedup_key uuid NOT NULL, "
    "record text NOT NULL, workload_key text NOT NULL"
    ") WITH (toast_tuple_target = 8160) ON COMMIT DROP";
constexpr const char* kCreateCandidateStaging =
    "CREATE TEMP TABLE tcl_upload_staging ("
    "platform_id bigint NOT NULL, program_id text NOT NULL, upload_id bigint NOT NULL, record text NOT NULL, "
    "workload_key text NOT NULL"
    ") WITH (toast_tuple_target = 8160) ON COMMIT DROP";
constexpr const char* kCopyMeasurementStaging =
    "COPY tcl_upload_staging (platform_id, program_id, upload_id, costs, error_no, all_cost, timestamp, dedup_key, "
    "record, workload_key) FROM STDIN (FORMAT binary)";
constexpr const char* kCopyCandidateStaging =
    "COPY tcl_upload_staging (platform_id, program_id, upload_id, record, workload_key) FROM STDIN (FORMAT binary)";

// Moving staged rows (only ever run holding the upload lock, so nothing
// races; ON CONFLICT is for rows stored before and repeats in the staging
// table). Existing tasks and programs are filtered out first, with `OFFSET 0`
// keeping each NOT EXISTS a per-row primary-key probe: as an anti-join the
// planner may hash the whole table, which grows without bound while an
// upload does not.
constexpr const char* kMoveTasks = R"sql(
INSERT INTO tasks (workload_key)
SELECT d.workload_key
FROM (SELECT DISTINCT workload_key FROM tcl_upload_staging) d
WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.workload_key = d.workload_key OFFSET 0)
ORDER BY d.workload_key
ON CONFLICT (workload_key) DO NOTHING
)sql";

// New programs are the platform's from the start (first_platform_id, $1):
// returns how many, and how many of their tasks are new to it.
constexpr const char* kMovePrograms = R"sql(
WITH ins AS (
  INSERT INTO programs (id, task_id, first_platform_id)
  SELECT n.program_id, t.id, $1
  FROM (SELECT DISTINCT ON (s.program_id) s.program_id, s.workload_key
        FROM tcl_upload_staging s
        WHERE NOT EXISTS (SELECT 1 FROM programs p WHERE p.id = s.program_id OFFSET 0)
        ORDER BY s.program_id) n
  JOIN tasks t ON t.workload_key = n.workload_key
  ON CONFLICT (id) DO NOTHING
  RETURNING task_id),
new_tasks AS (
  INSERT INTO platform_tasks (platform_id, task_id) SELECT DISTINCT $1::bigint, task_id FROM ins
  ON CONFLICT DO NOTHING
  RETURNING 1)
SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM new_tasks)
)sql";

// Each returns: rows inserted, of those failed, and how many programs that
// another platform stored first, and their tasks, are new to the platform
// $1 (add_others' counts, here for the moved rows).
constexpr const char* kMoveMeasurements = R"sql(
WITH ins AS (
  INSERT INTO measurements (platform_id, program_id, upload_id, costs, error_no, all_cost, timestamp, dedup_key, record)
  SELECT platform_id, program_id, upload_id, costs, error_no, all_cost, timestamp, dedup_key, record
  FROM tcl_upload_staging
  ON CONFLICT (dedup_key) DO NOTHING
  RETURNING program_id, failed),
new_programs AS (
  INSERT INTO platform_programs (platform_id, program_id, task_id)
  SELECT $1, i.program_id, p.task_id FROM (SELECT DISTINCT program_id FROM ins) i JOIN programs p ON p.id = i.program_id
  WHERE p.first_platform_id IS DISTINCT FROM $1
  ON CONFLICT DO NOTHING
  RETURNING task_id),
new_tasks AS (
  INSERT INTO platform_tasks (platform_id, task_id) SELECT DISTINCT $1::bigint, task_id FROM new_programs
  ON CONFLICT DO NOTHING
  RETURNING 1)
SELECT (SELECT count(*) FROM ins), (SELECT count(*) FILTER (WHERE failed) FROM ins),
       (SELECT count(*) FROM new_programs), (SELECT count(*) FROM new_tasks)
)sql";

constexpr const char* kMoveCandidates = R"sql(
WITH ins AS (
  INSERT INTO candidates (platform_id, program_id, upload_id, record)
  SELECT platform_id, program_id, upload_id, record
  FROM tcl_upload_staging
  ON CONFLICT (platform_id, program_id) DO NOTHING
  RETURNING program_id),
new_programs AS (
  INSERT INTO platform_programs (platform_id, program_id, task_id)
  SELECT $1, i.program_id, p.task_id FROM ins i JOIN programs p ON p.id = i.program_id
  WHERE p.first_platform_id IS DISTINCT FROM $1
  ON CONFLICT DO NOTHING
  RETURNING task_id),
new_tasks AS (
  INSERT INTO platform_tasks (platform_id, task_id) SELECT DISTINCT $1::bigint, task_id FROM new_programs
  ON CONFLICT DO NOTHING
  RETURNING 1)
SELECT (SELECT count(*) FROM ins), 0, (SELECT count(*) FROM new_programs), (SELECT count(*) FROM new_tasks)
)sql";

// The platform's programs and tasks (migrations/0007). A program is the
// platform's when its first_platform_id is the platform (set when an upload
// to it stores the program) or it has a platform_programs row there. For
// programs that another platform stored first: COPY of (platform, program,
// task) while none is the platform's yet (add_others), else kAddMembers ($1
// the platform, $2 the programs, $3 their tasks), which returns the task of
// each program that was new to the platform. kAddTasks: $2 the tasks of the
// programs new to the platform; returns one row per task new to it.
constexpr const char* kCopyMembers =
    "COPY platform_programs (platform_id, program_id, task_id) FROM STDIN (FORMAT binary)";

constexpr const char* kAddMembers = R"sql(
INSERT INTO platform_programs (platform_id, program_id, task_id)
SELECT $1, * FROM unnest($2::text[], $3::bigint[])
ON CONFLICT DO NOTHING
RETURNING task_id
)sql";

constexpr const char* kAddTasks = R"sql(
INSERT INTO platform_tasks (platform_id, task_id)
SELECT $1, unnest($2::bigint[])
ON CONFLICT DO NOTHING
)sql";

// Adds an upload's new rows to its platform's counts: $1 the platform, then
// new programs, tasks, successful and failed measurements, candidates.
constexpr const char* kAddCounts = R"sql(
INSERT INTO platform_counts AS c (platform_id, programs, tasks, measurements, failed, candidates)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (platform_id) DO UPDATE SET
  programs = c.programs + excluded.programs, tasks = c.tasks + excluded.tasks,
  measurements = c.measurements + excluded.measurements, failed = c.failed + excluded.failed,
  candidates = c.candidates + excluded.candidates
)sql";

// Programs of a direct slice: $1 their ids, $2 their task ids, $3 the
// platform. Inserts those not stored yet (with $3 as their first platform)
// and returns the others with their first platform, which add_members()
// needs: one index probe per program (`OFFSET 0`: see kStoredMeasurements).
constexpr const char* kInsertPrograms = R"sql(
WITH u AS (SELECT * FROM unnest($1::text[], $2::bigint[]) AS u(id, task)),
stored AS MATERIALIZED (
  SELECT u.id, x.first_platform_id
  FROM u, LATERAL (SELECT p.first_platform_id FROM programs p WHERE p.id = u.id OFFSET 0) x),
ins AS (
  INSERT INTO programs (id, task_id, first_platform_id)
  SELECT u.id, u.task, $3 FROM u WHERE NOT EXISTS (SELECT FROM stored WHERE stored.id = u.id)
  ON CONFLICT (id) DO NOTHING)
SELECT id, first_platform_id FROM stored
)sql";

// The stored rows among those of a slice: $1 their dedup keys
// (measurements; the key covers the platform), or $1 the platform and $2
// their program ids (candidates). One index probe per key (`OFFSET 0` keeps
// each EXISTS a probe): as `= ANY (array)` the planner likes a scan of the
// whole index with a hashed filter, which is fast on a small table and grows
// with it.
constexpr const char* kStoredMeasurements = R"sql(
SELECT k.key::text FROM unnest($1::uuid[]) AS k(key)
WHERE EXISTS (SELECT FROM measurements m WHERE m.dedup_key = k.key OFFSET 0)
)sql";

constexpr const char* kStoredCandidates = R"sql(
SELECT k.id FROM unnest($2::text[]) AS k(id)
WHERE EXISTS (SELECT FROM candidates c WHERE c.platform_id = $1 AND c.program_id = k.id OFFSET 0)
)sql";

// The ids of workload keys $1, inserting the missing ones (in key order, as
// everywhere). The SELECT from tasks sees the rows from before the INSERT,
// so the two halves never overlap.
constexpr const char* kTaskIds = R"sql(
WITH k AS (SELECT DISTINCT w FROM unnest($1::text[]) AS u(w)),
ins AS (
  INSERT INTO tasks (workload_key) SELECT w FROM k ORDER BY w
  ON CONFLICT (workload_key) DO NOTHING
  RETURNING id, workload_key)
SELECT id, workload_key FROM ins
UNION ALL
SELECT t.id, t.workload_key FROM tasks t JOIN k ON t.workload_key = k.w
)sql";

// A writer empties its task cache (workload key -> id) once it holds more
// keys than this: memory stays bounded on an upload of many tasks.
constexpr std::size_t kMaxCachedTasks = 100000;

template <typename Int>
void append_int(std::string& out, Int v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

void append_hex(std::string& out, const std::uint8_t* data, std::size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(kHex[data[i] >> 4]);
    out.push_back(kHex[data[i] & 15]);
  }
}

// An element of a text[] literal: always quoted, with \ and " escaped.
void append_array_element(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    if (c == '\\' || c == '"') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
}

// A uuid as PostgreSQL writes it (8-4-4-4-12 hex digits) back to bytes.
bool uuid_to_key(std::string_view text, DedupKey* key) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '-') continue;
    if (n == 32) return false;
    const char c = text[i];
    const int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) return false;
    (*key)[n / 2] = static_cast<std::uint8_t>(n % 2 == 0 ? v << 4 : (*key)[n / 2] | v);
    ++n;
  }
  return n == 32;
}

// The dedup key of a measurement: the first 16 bytes of the SHA-256 of
//   int64 platform_id || utf8(program_id) || 0x00 || int64 timestamp || float64 cost...
// with numbers big-endian and each cost + 0.0 (so -0 counts as 0): the same
// bytes as SQL tcl_measurement_dedup_key (migrations/0004; tested). `buf` is
// scratch space.
DedupKey measurement_dedup_key(std::int64_t platform_id, std::string_view program_id, std::int64_t timestamp,
                               std::span<const double> costs, std::string& buf, Sha256Stream& sha256) {
  buf.clear();
  put_be64(buf, static_cast<std::uint64_t>(platform_id));
  buf.append(program_id);
  buf.push_back('\0');
  put_be64(buf, static_cast<std::uint64_t>(timestamp));
  for (double c : costs) put_be64(buf, double_bits(c + 0.0));
  const Sha256Digest d = sha256.digest(buf);
  DedupKey key;
  std::memcpy(key.data(), d.data(), key.size());
  return key;
}

// How a program of a slice stands with the writer's platform, once
// write_programs() has stored the slice's programs (add_members).
enum class Standing : std::uint8_t {
  kUnused,          // no row of the slice refers to it
  kNew,             // stored by this slice: this platform is its first
  kFirstHere,       // stored before, by an upload to this platform: the platform's already
  kFirstElsewhere,  // stored before by another platform's upload (or before migrations/0007)
};

// Rows of one slice, as tuples of COPY's binary format, with what
// deduplication and the programs need.
struct Slice {
  std::string data;                               // the tuples, one after the other
  std::vector<std::size_t> ends;                  // per row: end of its tuple in `data`
  std::vector<std::uint32_t> program;             // per row: index into program_ids
  std::vector<DedupKey> keys;                     // per row (measurements)
  std::vector<std::uint8_t> failed;               // per row (measurements)
  std::vector<const std::string*> program_ids;    // distinct, first seen first (keys of program_index)
  std::vector<std::uint32_t> program_task;        // per program: index into workload_keys
  std::vector<const std::string*> workload_keys;  // distinct (keys of task_index)
  std::unordered_map<std::string, std::uint32_t> program_index, task_index;

  std::size_t rows() const { return ends.size(); }
  std::string_view tuple(std::size_t i) const {
    const std::size_t begin = i == 0 ? 0 : ends[i - 1];
    return std::string_view(data).substr(begin, ends[i] - begin);
  }
  void clear() {
    data.clear();
    ends.clear();
    program.clear();
    keys.clear();
    failed.clear();
    program_ids.clear();
    program_task.clear();
    workload_keys.clear();
    program_index.clear();
    task_index.clear();
  }
};

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

// COPY `command` (... FROM STDIN (FORMAT binary)) of `tuples`, straight
// through libpq on the transaction's connection. After it the connection is
// idle in the transaction again, as libpqxx expects; on error the
// transaction (or savepoint) is aborted, as after any failed statement.
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
  bool sent = PQputCopyData(conn, internal::kCopyHeader.data(), static_cast<int>(internal::kCopyHeader.size())) == 1;
  while (sent && !tuples.empty()) {
    const std::size_t n = std::min(tuples.size(), kPiece);
    sent = PQputCopyData(conn, tuples.data(), static_cast<int>(n)) == 1;
    tuples.remove_prefix(n);
  }
  sent =
      sent && PQputCopyData(conn, internal::kCopyTrailer.data(), static_cast<int>(internal::kCopyTrailer.size())) == 1;
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

// The previous upload for (platform, kind, key or body hash), read in `tx`.
Result<std::optional<CommittedUpload>> find_previous_in(pqxx::transaction_base& tx, std::int64_t platform_id,
                                                        UploadKind kind, std::string_view key,
                                                        std::string_view body_sha256) {
  const std::string kind_name(upload_kind_name(kind));
  if (!key.empty()) {
    // The key is unique per platform (schema): a hit of the other kind, or
    // with another body, is a reused key, not a retry. An empty hash (the
    // body is not read yet) compares the key only.
    const pqxx::result r = tx.exec_params(
        "SELECT id, kind, body_sha256, report::text FROM uploads WHERE platform_id = $1 AND idempotency_key = $2",
        platform_id, std::string(key));
    if (r.empty()) return std::optional<CommittedUpload>();
    const std::int64_t id = r[0][0].as<std::int64_t>();
    const std::string used_by = "Idempotency-Key '" + std::string(key) + "' was already used by upload " +
                                std::to_string(id) + " (" + r[0][1].as<std::string>() + ")";
    if (r[0][1].as<std::string>() != kind_name) return Status::failed_precondition(used_by);
    if (!body_sha256.empty() && r[0][2].as<std::string>() != body_sha256) {
      return Status::failed_precondition(used_by + " with a different body");
    }
    return std::optional<CommittedUpload>(CommittedUpload{id, r[0][3].as<std::string>(), true});
  }
  const pqxx::result r = tx.exec_params(
      "SELECT id, report::text FROM uploads WHERE platform_id = $1 AND kind = $2 AND body_sha256 = $3 "
      "ORDER BY id LIMIT 1",
      platform_id, kind_name, std::string(body_sha256));
  if (r.empty()) return std::optional<CommittedUpload>();
  return std::optional<CommittedUpload>(CommittedUpload{r[0][0].as<std::int64_t>(), r[0][1].as<std::string>(), true});
}

}  // namespace

std::string_view upload_kind_name(UploadKind k) {
  switch (k) {
    case UploadKind::kMeasurements: return "measurements";
    case UploadKind::kCandidates: return "candidates";
  }
  return "measurements";
}

// ---------------------------------------------------------------------------
// UploadWriter

struct UploadWriter::Impl {
  Impl(PgPool::Lease l, std::int64_t platform, UploadKind k)
      : lease(std::move(l)), platform_id(platform), kind(k), filling(std::make_unique<Slice>()) {}
  ~Impl() {
    // The thread first (it may be using the transaction), then the
    // transaction (rolls back unless committed; swallows errors of a dead
    // connection), then the lease.
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    if (worker.joinable()) worker.join();
    tx.reset();
  }

  bool measurements() const { return kind == UploadKind::kMeasurements; }

  std::string what() const {
    return std::string(upload_kind_name(kind)) + " upload for platform " + std::to_string(platform_id);
  }

  // Call only inside a catch block: the Status of the failure; the
  // connection is discarded when it is gone. Does not record it (record()).
  Status fail(std::string_view what_failed) {
    bool lost = false;
    Status s = internal::status_from_current_exception(what_failed, &lost);
    if (lost || !lease.conn().is_open()) {
      lease.discard();
      if (s.code() != StatusCode::kUnavailable) {
        s = Status(StatusCode::kUnavailable, "database connection lost: " + s.message());
      }
    }
    return s;
  }

  // Makes `s` the writer's error (the first one wins) and returns it.
  Status record(Status s) {
    std::lock_guard<std::mutex> lock(mu);
    if (error.is_ok()) {
      error = std::move(s);
      dead = true;
    }
    return error;
  }

  // OK while rows may still be added / committed.
  Status usable(std::string_view op) {
    if (dead.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(mu);
      return error;
    }
    if (finished) return Status::failed_precondition(std::string(op) + ": upload already committed");
    return Status::ok();
  }

  // --- the caller's thread ---------------------------------------------------

  // Formats `row` into the filling slice; hands the slice over when full.
  Status add(const UploadRow& row) {
    Slice& s = *filling;
    auto [task, new_task] =
        s.task_index.try_emplace(row.workload_key, static_cast<std::uint32_t>(s.workload_keys.size()));
    if (new_task) s.workload_keys.push_back(&task->first);
    auto [program, new_program] =
        s.program_index.try_emplace(row.program_id, static_cast<std::uint32_t>(s.program_ids.size()));
    if (new_program) {
      s.program_ids.push_back(&program->first);
      s.program_task.push_back(task->second);
    }
    s.program.push_back(program->second);

    // One tuple: its field count, then the fields in kCopyMeasurements' or
    // kCopyCandidates' order.
    std::string& out = s.data;
    begin_tuple(out, measurements() ? 9 : 4);
    field_int8(out, platform_id);
    field_bytes(out, row.program_id);
    field_int8(out, upload_id);
    if (measurements()) {
      field_float8_array(out, row.costs);
      field_int4(out, row.error_no);
      field_float8(out, row.all_cost);
      field_int8(out, row.timestamp);
      const DedupKey key =
          measurement_dedup_key(platform_id, row.program_id, row.timestamp, row.costs, key_scratch, hasher);
      field_bytes(out, std::string_view(reinterpret_cast<const char*>(key.data()), key.size()));  // uuid
      s.keys.push_back(key);
      s.failed.push_back(core::measurement_failed(row.error_no, row.costs) ? 1 : 0);
    }
    field_bytes(out, row.record);
    s.ends.push_back(out.size());
    ++staged;
    const bool full = s.rows() >= (submitted == 0 ? kFirstSliceRows : kSliceRows) || s.data.size() >= kSliceBytes;
    return full ? submit() : Status::ok();
  }

  // Hands the filling slice to the writer's thread (started on first use),
  // waiting while the one before is still queued.
  Status submit() {
    std::unique_lock<std::mutex> lock(mu);
    if (!worker.joinable()) {
      try {
        worker = std::thread([this] { run(); });
      } catch (const std::system_error& e) {
        lock.unlock();
        return record(Status::internal(std::string("cannot start the upload's writer thread: ") + e.what()));
      }
    }
    cv.wait(lock, [this] { return queued == nullptr || dead; });
    if (dead) return error;
    queued = std::move(filling);
    ++submitted;
    if (spare.empty()) {
      filling = std::make_unique<Slice>();
    } else {
      filling = std::move(spare.back());
      spare.pop_back();
    }
    cv.notify_all();
    return Status::ok();
  }

  // Waits until the writer's thread has written everything handed to it;
  // after that, the calling thread may use the transaction.
  Status drain() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return queued == nullptr && !busy; });
    return error;
  }

  // --- the writer's thread -----------------------------------------------------

  void run() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv.wait(lock, [this] { return stop || queued != nullptr; });
      if (stop) return;
      std::unique_ptr<Slice> slice = std::move(queued);
      busy = true;
      cv.notify_all();  // room for the next slice
      const bool skip = dead;
      lock.unlock();
      Status failure;
      if (!skip) {
        try {
          write_slice(*slice);
        } catch (...) {
          failure = fail("writing rows of " + what());
        }
      }
      slice->clear();
      lock.lock();
      busy = false;
      spare.push_back(std::move(slice));
      if (!failure.is_ok() && error.is_ok()) {
        error = std::move(failure);
        dead = true;
      }
      cv.notify_all();
    }
  }

  // The functions below use the transaction: only one thread at a time runs
  // them (the writer's thread, or commit() after drain()). They throw.

  // Every slice before commit() is staged: the upload lock is a
  // transaction-level lock, held from the moment it is taken to the commit,
  // so taking it here let one slow upload (a slow link, a trickling client)
  // hold every other upload's commit for its whole life (issue 45, finding
  // 5). Only commit() takes it, for the merge.
  void write_slice(Slice& s) { stage(s); }

  // Without the lock: into the staging table, with each row's workload key.
  void stage(const Slice& s) {
    if (!staging_created) {
      tx->exec0(measurements() ? kCreateMeasurementStaging : kCreateCandidateStaging);
      staging_created = true;
    }
    // Each tuple with one more field: its workload key.
    scratch.clear();
    for (std::size_t i = 0; i < s.rows(); ++i) {
      const std::string_view tuple = s.tuple(i);
      begin_tuple(scratch, measurements() ? 10 : 5);
      scratch.append(tuple.substr(2));
      field_bytes(scratch, *s.workload_keys[s.program_task[s.program[i]]]);
    }
    copy_binary(*tx, measurements() ? kCopyMeasurementStaging : kCopyCandidateStaging, scratch);
    rows_in_staging += static_cast<std::int64_t>(s.rows());
  }

  // Holding the lock: staged rows into the tables.
  void move_staged() {
    if (rows_in_staging == 0) return;
    tx->exec0(kMoveTasks);
    const pqxx::row programs = tx->exec_params1(kMovePrograms, platform_id);
    new_programs += programs[0].as<std::int64_t>();
    new_tasks += programs[1].as<std::int64_t>();
    const pqxx::row moved = tx->exec_params1(measurements() ? kMoveMeasurements : kMoveCandidates, platform_id);
    inserted += moved[0].as<std::int64_t>();
    failed += moved[1].as<std::int64_t>();
    new_programs += moved[2].as<std::int64_t>();
    new_tasks += moved[3].as<std::int64_t>();
    tx->exec0("TRUNCATE tcl_upload_staging");
    rows_in_staging = 0;
  }

  // Holding the lock: the slice's new rows (with their tasks and programs)
  // straight into the tables.
  void write_direct(const Slice& s) {
    const std::size_t n = s.rows();
    if (n == 0) return;
    const std::size_t np = s.program_ids.size();

    // 1. Repeats within the slice: the first one wins.
    std::vector<std::uint8_t> keep(n, 0);
    if (measurements()) {
      std::unordered_set<DedupKey, DedupKeyHash> seen;
      seen.reserve(n);
      for (std::size_t i = 0; i < n; ++i) keep[i] = seen.insert(s.keys[i]).second ? 1 : 0;
    } else {
      std::vector<std::uint8_t> taken(np, 0);
      for (std::size_t i = 0; i < n; ++i) {
        keep[i] = taken[s.program[i]] ? 0 : 1;
        taken[s.program[i]] = 1;
      }
    }

    // 2. The tasks and programs of those rows, then 3. the rows, in add()
    //    order. Both may be stored already (by an earlier upload or slice);
    //    that is found either way: optimistically, by COPYing in a savepoint
    //    and, should a unique index reject a row, rolling back and asking;
    //    or, after a slice that had such rows, by asking first, until a
    //    slice has none again. A new upload thus never pays for the
    //    question (one more index descent per row: ~2-3 us for a
    //    measurement's dedup key, ~5 us for a program id in a large table);
    //    a repeated one pays for one wasted slice. (Each rejected COPY leaves
    //    a "duplicate key" ERROR in the server log.)
    std::vector<std::uint8_t> used(np, 0);
    for (std::size_t i = 0; i < n; ++i) {
      if (keep[i]) used[s.program[i]] = 1;
    }
    resolve_tasks(s, used);
    std::vector<Standing> standing(np, Standing::kUnused);
    write_programs(s, used, standing);

    const char* copy_rows = measurements() ? kCopyMeasurements : kCopyCandidates;
    if (ask_rows_first || !copy_in_savepoint(copy_rows, kept_tuples(s, keep))) {
      ask_rows_first = drop_stored(s, keep) > 0;
      copy_binary(*tx, copy_rows, kept_tuples(s, keep));
    }
    count_inserted(s, keep);
    add_members(s, keep, standing);
  }

  // COPY `command` of `tuples` in a savepoint; false (rolled back) when a
  // unique index rejected a row. (Plain SQL savepoints: a
  // pqxx::subtransaction only issues SAVEPOINT when a command goes through
  // it, and the COPY does not.)
  bool copy_in_savepoint(const char* command, std::string_view tuples) {
    tx->exec0("SAVEPOINT tcl_upload_slice");
    try {
      copy_binary(*tx, command, tuples);
    } catch (const pqxx::unique_violation&) {
      tx->exec0("ROLLBACK TO SAVEPOINT tcl_upload_slice; RELEASE SAVEPOINT tcl_upload_slice");
      return false;
    }
    tx->exec0("RELEASE SAVEPOINT tcl_upload_slice");
    return true;
  }

  // The used programs of the slice that are not stored yet, with this
  // platform as their first; sets the standing of every used program.
  void write_programs(const Slice& s, const std::vector<std::uint8_t>& used, std::vector<Standing>& standing) {
    std::size_t count = 0;
    if (!ask_programs_first) {
      scratch.clear();
      for (std::size_t p = 0; p < used.size(); ++p) {
        if (!used[p]) continue;
        begin_tuple(scratch, 3);
        field_bytes(scratch, *s.program_ids[p]);
        field_int8(scratch, task_ids.at(*s.workload_keys[s.program_task[p]]));
        field_int8(scratch, platform_id);
      }
      if (scratch.empty()) return;
      if (copy_in_savepoint(kCopyPrograms, scratch)) {
        for (std::size_t p = 0; p < used.size(); ++p) standing[p] = used[p] ? Standing::kNew : Standing::kUnused;
        return;
      }
      ask_programs_first = true;
    }
    scratch.assign("{");
    scratch2.assign("{");
    for (std::size_t p = 0; p < used.size(); ++p) {
      if (!used[p]) continue;
      if (count++ > 0) {
        scratch.push_back(',');
        scratch2.push_back(',');
      }
      append_array_element(scratch, *s.program_ids[p]);
      append_int(scratch2, task_ids.at(*s.workload_keys[s.program_task[p]]));
    }
    scratch.push_back('}');
    scratch2.push_back('}');
    if (count == 0) return;
    for (std::size_t p = 0; p < used.size(); ++p) standing[p] = used[p] ? Standing::kNew : Standing::kUnused;
    const pqxx::result stored = tx->exec_params(kInsertPrograms, scratch, scratch2, platform_id);
    std::string id;
    for (const pqxx::row& r : stored) {
      id.assign(r[0].c_str(), r[0].size());
      const auto it = s.program_index.find(id);
      if (it == s.program_index.end()) continue;
      const bool first_here = !r[1].is_null() && r[1].as<std::int64_t>() == platform_id;
      standing[it->second] = first_here ? Standing::kFirstHere : Standing::kFirstElsewhere;
    }
    ask_programs_first = !stored.empty();
  }

  // Clears keep[i] for the rows whose dedup key is stored; returns how many.
  std::size_t drop_stored(const Slice& s, std::vector<std::uint8_t>& keep) {
    const std::size_t n = s.rows();
    scratch.assign("{");
    if (measurements()) {
      for (std::size_t i = 0; i < n; ++i) {
        if (!keep[i]) continue;
        if (scratch.size() > 1) scratch.push_back(',');
        append_hex(scratch, s.keys[i].data(), s.keys[i].size());
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        if (!keep[i]) continue;
        if (scratch.size() > 1) scratch.push_back(',');
        append_array_element(scratch, *s.program_ids[s.program[i]]);
      }
    }
    scratch.push_back('}');
    const pqxx::result stored = measurements() ? tx->exec_params(kStoredMeasurements, scratch)
                                               : tx->exec_params(kStoredCandidates, platform_id, scratch);
    if (stored.empty()) return 0;
    std::unordered_set<DedupKey, DedupKeyHash> stored_keys;
    std::vector<std::uint8_t> stored_programs(s.program_ids.size(), 0);
    std::string value;
    for (const pqxx::row& r : stored) {
      value.assign(r[0].c_str(), r[0].size());
      if (measurements()) {
        DedupKey k;
        if (uuid_to_key(value, &k)) stored_keys.insert(k);
      } else if (const auto it = s.program_index.find(value); it != s.program_index.end()) {
        stored_programs[it->second] = 1;
      }
    }
    std::size_t dropped = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!keep[i]) continue;
      const bool is_stored = measurements() ? stored_keys.contains(s.keys[i]) : stored_programs[s.program[i]] != 0;
      if (is_stored) {
        keep[i] = 0;
        ++dropped;
      }
    }
    return dropped;
  }

  // The tuples of the kept rows (the slice's own bytes when all are kept,
  // else gathered in `scratch`).
  std::string_view kept_tuples(const Slice& s, const std::vector<std::uint8_t>& keep) {
    const std::size_t n = s.rows();
    std::size_t kept = 0;
    for (std::size_t i = 0; i < n; ++i) kept += keep[i];
    if (kept == n) return s.data;
    scratch.clear();
    for (std::size_t i = 0; i < n; ++i) {
      if (keep[i]) scratch.append(s.tuple(i));
    }
    return scratch;
  }

  void count_inserted(const Slice& s, const std::vector<std::uint8_t>& keep) {
    for (std::size_t i = 0; i < s.rows(); ++i) {
      if (!keep[i]) continue;
      ++inserted;
      if (measurements() && s.failed[i]) ++failed;
    }
  }

  // Adds what this upload inserted to its platform's counts (at commit,
  // holding the lock, so concurrent uploads add one after the other).
  void add_to_counts() {
    if (inserted == 0) return;  // then no program or task is new either
    const std::int64_t ok = measurements() ? inserted - failed : 0;
    const std::int64_t candidates = measurements() ? 0 : inserted;
    tx->exec_params0(kAddCounts, platform_id, new_programs, new_tasks, ok, failed, candidates);
  }

  // The programs of the inserted rows (keep[i]) become the platform's;
  // counts those that were not yet, and their tasks that were not yet. New
  // programs are the platform's already (their first platform) and count at
  // once, so an upload of new programs writes no membership row; programs
  // another platform stored first go to add_others().
  void add_members(const Slice& s, const std::vector<std::uint8_t>& keep, const std::vector<Standing>& standing) {
    std::vector<std::uint8_t> seen(s.program_ids.size(), 0);
    std::vector<std::uint32_t> others;
    std::set<std::int64_t> tasks;  // of the programs new to the platform
    for (std::size_t i = 0; i < s.rows(); ++i) {
      const std::uint32_t p = s.program[i];
      if (!keep[i] || seen[p]) continue;
      seen[p] = 1;
      if (standing[p] == Standing::kNew) {
        ++new_programs;
        tasks.insert(task_of(s, p));
      } else if (standing[p] == Standing::kFirstElsewhere) {
        others.push_back(p);
      }
    }
    if (!others.empty()) add_others(s, others, tasks);
    if (tasks.empty()) return;
    scratch2.assign("{");
    for (std::int64_t t : tasks) {
      if (scratch2.size() > 1) scratch2.push_back(',');
      append_int(scratch2, t);
    }
    scratch2.push_back('}');
    new_tasks += static_cast<std::int64_t>(tx->exec_params(kAddTasks, platform_id, scratch2).affected_rows());
  }

  // Programs that another platform stored first become this one's through a
  // platform_programs row: by COPY while none has one yet (as when known
  // programs go to a new platform), else with ON CONFLICT until a slice
  // finds none. Counts the new ones and adds their tasks to `tasks`.
  void add_others(const Slice& s, const std::vector<std::uint32_t>& others, std::set<std::int64_t>& tasks) {
    if (!ask_members_first) {
      scratch.clear();
      for (std::uint32_t p : others) {
        begin_tuple(scratch, 3);
        field_int8(scratch, platform_id);
        field_bytes(scratch, *s.program_ids[p]);
        field_int8(scratch, task_of(s, p));
      }
      if (copy_in_savepoint(kCopyMembers, scratch)) {
        new_programs += static_cast<std::int64_t>(others.size());
        for (std::uint32_t p : others) tasks.insert(task_of(s, p));
        return;
      }
    }
    scratch.assign("{");
    scratch2.assign("{");
    for (std::uint32_t p : others) {
      if (scratch.size() > 1) {
        scratch.push_back(',');
        scratch2.push_back(',');
      }
      append_array_element(scratch, *s.program_ids[p]);
      append_int(scratch2, task_of(s, p));
    }
    scratch.push_back('}');
    scratch2.push_back('}');
    const pqxx::result added = tx->exec_params(kAddMembers, platform_id, scratch, scratch2);
    new_programs += static_cast<std::int64_t>(added.size());
    for (const pqxx::row& r : added) tasks.insert(r[0].as<std::int64_t>());
    ask_members_first = added.size() < others.size();
  }

  std::int64_t task_of(const Slice& s, std::uint32_t program) const {
    return task_ids.at(*s.workload_keys[s.program_task[program]]);
  }

  // Makes task_ids hold the id of the task of every needed program,
  // inserting the tasks that do not exist yet.
  void resolve_tasks(const Slice& s, const std::vector<std::uint8_t>& needed) {
    if (task_ids.size() > kMaxCachedTasks) task_ids.clear();  // before looking: the slice's ids must stay
    std::vector<const std::string*> missing;
    std::vector<std::uint8_t> asked(s.workload_keys.size(), 0);
    for (std::size_t p = 0; p < needed.size(); ++p) {
      const std::uint32_t t = s.program_task[p];
      if (!needed[p] || asked[t] || task_ids.contains(*s.workload_keys[t])) continue;
      asked[t] = 1;
      missing.push_back(s.workload_keys[t]);
    }
    if (missing.empty()) return;
    scratch2.assign("{");
    for (std::size_t i = 0; i < missing.size(); ++i) {
      if (i > 0) scratch2.push_back(',');
      append_array_element(scratch2, *missing[i]);
    }
    scratch2.push_back('}');
    for (const pqxx::row& r : tx->exec_params(kTaskIds, scratch2)) {
      task_ids[r[1].as<std::string>()] = r[0].as<std::int64_t>();
    }
    for (const std::string* key : missing) {
      if (!task_ids.contains(*key)) throw std::runtime_error("task of workload key '" + *key + "' was not stored");
    }
  }

  PgPool::Lease lease;
  std::unique_ptr<pqxx::work> tx;  // open from begin() until commit or rollback
  const std::int64_t platform_id;
  const UploadKind kind;
  std::int64_t upload_id = 0;  // reserved by begin(); the uploads row is inserted by commit()

  // The caller's thread.
  std::unique_ptr<Slice> filling;
  std::int64_t staged = 0;
  std::int64_t submitted = 0;  // slices handed to the writer's thread
  bool finished = false;       // committed, or replayed and rolled back
  std::string key_scratch;
  Sha256Stream hasher;

  // Whoever writes (see above).
  bool locked = false;  // we hold the upload lock
  bool staging_created = false;
  std::int64_t rows_in_staging = 0;
  std::int64_t inserted = 0;
  std::int64_t failed = 0;
  std::int64_t new_programs = 0;  // programs and tasks new to the platform
  std::int64_t new_tasks = 0;
  std::unordered_map<std::string, std::int64_t> task_ids;  // workload key -> task id, in our transaction
  std::string scratch, scratch2;
  bool ask_rows_first = false;      // write_direct(): look for stored rows before COPY
  bool ask_programs_first = false;  // write_direct(): insert programs with ON CONFLICT
  bool ask_members_first = false;   // add_others(): insert members with ON CONFLICT

  // Hand-over between the caller and the writer's thread.
  std::mutex mu;
  std::condition_variable cv;
  std::unique_ptr<Slice> queued;              // guarded by mu: the next slice to write
  std::vector<std::unique_ptr<Slice>> spare;  // guarded by mu: written slices, for reuse
  bool busy = false;                          // guarded by mu: the thread is writing a slice
  bool stop = false;                          // guarded by mu
  Status error;                               // guarded by mu: the first failure; not OK = dead
  std::atomic<bool> dead{false};              // error is set
  std::thread worker;
};

UploadWriter::UploadWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

UploadWriter::~UploadWriter() = default;

Status UploadWriter::add(const UploadRow& row) {
  Impl& m = *impl_;
  if (Status s = m.usable("add"); !s) return s;
  return m.add(row);
}

Result<CommittedUpload> UploadWriter::commit(
    std::string_view idempotency_key, std::string_view body_sha256,
    const std::function<std::string(std::int64_t upload_id, const UploadCounts&)>& make_report) {
  Impl& m = *impl_;
  if (Status s = m.usable("commit"); !s) return s;
  if (Status s = m.drain(); !s) return s;  // from here on, this thread writes
  try {
    pqxx::work& tx = *m.tx;
    if (!m.locked) {
      tx.exec_params("SELECT pg_advisory_xact_lock($1, $2)", kUploadLockClass, kUploadLockObject);
      m.locked = true;
    }

    // A concurrent retry may have committed while we streamed.
    auto previous = find_previous_in(tx, m.platform_id, m.kind, idempotency_key, body_sha256);
    if (!previous || previous->has_value()) {
      tx.abort();
      m.finished = true;
      if (!previous) return m.record(previous.status());
      return std::move(**previous);
    }

    try {
      tx.exec_params0(
          "INSERT INTO uploads (id, platform_id, kind, idempotency_key, body_sha256) OVERRIDING SYSTEM VALUE "
          "VALUES ($1, $2, $3, NULLIF($4, ''), $5)",
          m.upload_id, m.platform_id, std::string(upload_kind_name(m.kind)), std::string(idempotency_key),
          std::string(body_sha256));
    } catch (const pqxx::unique_violation&) {
      // The lock makes find_previous_in() above see every committed upload,
      // so this is not expected; kept as the schema's last word.
      return m.record(Status::failed_precondition("Idempotency-Key '" + std::string(idempotency_key) +
                                                  "' was just used by another upload of this platform"));
    }
    m.move_staged();
    m.write_direct(*m.filling);
    m.filling->clear();
    m.add_to_counts();

    UploadCounts counts;
    counts.staged = m.staged;
    counts.inserted = m.inserted;
    counts.failed = m.failed;
    counts.duplicates = counts.staged - counts.inserted;
    const std::string report = make_report(m.upload_id, counts);
    // Returned as stored (jsonb's rendering), so a replay answers byte for
    // byte what the first commit answered.
    std::string stored = tx.exec_params1("UPDATE uploads SET report = $2::jsonb WHERE id = $1 RETURNING report::text",
                                         m.upload_id, report)[0]
                             .as<std::string>();
    tx.commit();
    m.finished = true;
    return CommittedUpload{m.upload_id, std::move(stored), false};
  } catch (...) {
    return m.record(m.fail("committing " + m.what()));
  }
}

// ---------------------------------------------------------------------------
// UploadStore

Result<std::optional<CommittedUpload>> UploadStore::find_previous(std::int64_t platform_id, UploadKind kind,
                                                                  std::string_view idempotency_key,
                                                                  std::string_view body_sha256) {
  const std::string what = "looking up earlier " + std::string(upload_kind_name(kind)) + " uploads";
  return internal::with_connection(pool_, what, [&](pqxx::connection& conn) -> Result<std::optional<CommittedUpload>> {
    pqxx::read_transaction tx(conn);
    return find_previous_in(tx, platform_id, kind, idempotency_key, body_sha256);
  });
}

Result<std::unique_ptr<UploadWriter>> UploadStore::begin(std::int64_t platform_id, UploadKind kind) {
  const std::string what =
      "starting " + std::string(upload_kind_name(kind)) + " upload for platform " + std::to_string(platform_id);
  // Like with_connection(): an idle connection found dead (the server
  // restarted) is replaced once; nothing was streamed yet, so that is safe.
  for (int attempt = 0;; ++attempt) {
    auto lease = pool_.acquire();
    if (!lease) return lease.status().with_context(what);
    auto impl = std::make_unique<UploadWriter::Impl>(std::move(*lease), platform_id, kind);
    try {
      impl->tx = std::make_unique<pqxx::work>(impl->lease.conn());
      // The move statements' per-row probes make the planner's cost
      // estimates huge, which would JIT-compile them (~150 ms each) for no gain.
      // tcl.platform_counts: this transaction keeps platform_counts itself
      // (add_to_counts), so migrations/0007's trigger does not recount.
      impl->tx->exec0("SET LOCAL jit = off; SET LOCAL tcl.platform_counts = 'maintained'");
      // The id is reserved now so that rows can carry it before the uploads
      // row exists (commit() inserts it); an upload rolled back leaves a gap.
      impl->upload_id =
          impl->tx->exec1("SELECT nextval(pg_get_serial_sequence('uploads', 'id'))")[0].as<std::int64_t>();
      return std::unique_ptr<UploadWriter>(new UploadWriter(std::move(impl)));
    } catch (...) {
      Status s = impl->fail(what);
      impl.reset();
      if (s.code() != StatusCode::kUnavailable || attempt > 0) return s;
    }
  }
}

Status UploadStore::for_each_record(std::int64_t platform_id, UploadKind kind,
                                    const std::function<bool(const StoredRecord&)>& sink, int batch) {
  if (batch < 1) return Status::invalid_argument("for_each_record: batch must be at least 1");
  const std::string table(upload_kind_name(kind));
  const std::string what = "reading " + table + " of platform " + std::to_string(platform_id);
  // platform_id is an integer, so it is spelled into DECLARE (which takes no
  // bind parameters) safely.
  const std::string declare = "DECLARE tcl_records NO SCROLL CURSOR FOR SELECT program_id, record FROM " + table +
                              " WHERE platform_id = " + std::to_string(platform_id) + " ORDER BY id";
  const std::string fetch = "FETCH FORWARD " + std::to_string(batch) + " FROM tcl_records";

  std::int64_t delivered = 0;
  return internal::with_connection(
      pool_, what,
      [&](pqxx::connection& conn) -> Status {
        pqxx::read_transaction tx(conn);
        tx.exec0(declare);
        StoredRecord rec;
        for (;;) {
          const pqxx::result r = tx.exec(fetch);
          for (const pqxx::row& row : r) {
            rec.program_id.assign(row[0].c_str(), row[0].size());
            rec.record.assign(row[1].c_str(), row[1].size());
            ++delivered;
            if (!sink(rec)) return Status::ok();  // the read-only transaction rolls back
          }
          if (r.size() < static_cast<std::size_t>(batch)) break;
        }
        tx.commit();
        return Status::ok();
      },
      // Once the sink saw rows, a retry would repeat them: report instead.
      [&] { return delivered == 0; });
}

}  // namespace tcl::registry
