// registry/upload_writer_internal.h — the insides of an UploadWriter
// (upload_store.h), shared by the upload_*.cc files that implement it. For
// registry/ .cc files only (it includes pqxx).
//
// How an upload is written (the contract is upload_store.h's):
// add() formats each row as a tuple of binary COPY for its table
// (measurements or candidates) into a Slice, in the caller's thread. A full
// slice goes to the writer's thread (upload_writer.cc), which writes it
// while the caller fills the next one (at most one slice waits, so memory
// stays at ~3 slices: ~15 MB). Every full slice is COPied into a temporary
// staging table (upload_staging.cc), without the upload lock; commit()
// (upload_store.cc) takes the lock, moves the staged rows with INSERT ...
// SELECT ... ON CONFLICT, and writes the last, partial slice straight into
// the tables (upload_direct.cc):
//   1. repeats within the slice are dropped (a hash set; first one wins);
//   2. new tasks (once per upload and workload key: cached), then the
//      slice's programs, then its rows, each with one COPY. Rows or programs
//      stored before make a unique index reject the COPY, which runs in a
//      savepoint: it is rolled back and the slice asks which of its keys
//      are stored (one index probe each) before writing the others; later
//      slices keep asking first until one finds nothing stored.
//   3. the platform's counts (migrations/0007, upload_counts.cc): a new
//      program is stored with the platform as its first
//      (programs.first_platform_id) and counts as new to it; one that
//      another platform stored first gets a platform_programs row (COPY, or
//      ON CONFLICT as above); the tasks of both go into platform_tasks (ON
//      CONFLICT), which tells how many tasks are new to the platform.
// commit() adds the upload's totals to platform_counts, and records the
// upload with its key, body hash and report (upload_idempotency.cc). Slices
// used to be written straight in once a try of the lock succeeded; but the
// lock, once taken, is held to the commit, so one slow upload stalled every
// other upload's commit for its whole life (issue 45, finding 5).
//
// Measured (PostgreSQL backend CPU, 50k real x86 records of new programs,
// into small tables): COPY straight into measurements 0.46 s, against 0.23 s
// COPY into staging + 0.41 s INSERT ... SELECT ON CONFLICT; programs 0.15 s
// by COPY, 0.31 s by INSERT ... SELECT. Asking first costs ~2-3 us a row for
// a dedup key, ~5 us for a program id in a large table.
//
// Thread-safety: an Impl is used by its writer's caller thread and by its
// writer thread; which members each may touch is said where they are
// declared (the hand-over's are GUARDED_BY its mutex, checked by
// scripts/thread_safety.sh).
#pragma once

#include <pqxx/pqxx>

#include <array>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/mutex.h"
#include "core/sha256.h"
#include "core/status.h"
#include "core/thread_annotations.h"
#include "registry/pg_pool.h"
#include "registry/upload_store.h"

namespace tcl::registry {
namespace internal {

// Slice size: a few round trips per slice, so a slice is large; but the
// server idles until the first one is full, so that one is small.
inline constexpr std::size_t kSliceRows = 4096;
inline constexpr std::size_t kFirstSliceRows = 256;
inline constexpr std::size_t kSliceBytes = 4u << 20;

// A writer empties its task cache (workload key -> id) once it holds more
// keys than this: memory stays bounded on an upload of many tasks.
inline constexpr std::size_t kMaxCachedTasks = 100000;

using DedupKey = std::array<std::uint8_t, 16>;

struct DedupKeyHash {
  std::size_t operator()(const DedupKey& k) const {
    std::size_t h;  // the key is a hash already
    std::memcpy(&h, k.data(), sizeof h);
    return h;
  }
};

// The dedup key of a measurement: the first 16 bytes of the SHA-256 of
//   int64 platform_id || utf8(program_id) || 0x00 || int64 timestamp || float64 cost...
// with numbers big-endian and each cost + 0.0 (so -0 counts as 0): the same
// bytes as SQL tcl_measurement_dedup_key (migrations/0004; tested). `buf` is
// scratch space. (upload_store.cc, which the migration names.)
DedupKey measurement_dedup_key(std::int64_t platform_id, std::string_view program_id, std::int64_t timestamp,
                               std::span<const double> costs, std::string& buf, Sha256Stream& sha256);

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

// --- upload_copy.cc: how rows and keys reach the server ---------------------

// COPY `command` (... FROM STDIN (FORMAT binary)) of `tuples`, straight
// through libpq on the transaction's connection (libpqxx 6 has no binary
// COPY). After it the connection is idle in the transaction again, as
// libpqxx expects; on error the transaction (or savepoint) is aborted, as
// after any failed statement, and the libpqxx exception for it is thrown:
// broken_connection when the connection is gone, else sql_error
// (unique_violation for 23505) with the SQLSTATE. Empty `tuples`: nothing.
void copy_binary(pqxx::dbtransaction& tx, const char* command, std::string_view tuples);
// copy_binary() in a savepoint; false (rolled back) when a unique index
// rejected a row. Other errors throw, as copy_binary().
bool copy_in_savepoint(pqxx::dbtransaction& tx, const char* command, std::string_view tuples);

// Elements of array literals for bind parameters ('{...}'): an integer; the
// lower-case hex of `n` bytes (a uuid[] element); a text[] element, always
// quoted, with \ and " escaped.
template <typename Int>
void append_int(std::string& out, Int v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}
void append_hex(std::string& out, const std::uint8_t* data, std::size_t n);
void append_array_element(std::string& out, std::string_view s);
// A uuid as PostgreSQL writes it (8-4-4-4-12 hex digits) back to bytes;
// false when it is not one.
bool uuid_to_key(std::string_view text, DedupKey* key);

// --- upload_idempotency.cc ---------------------------------------------------

// The previous upload for (platform, kind, key or body hash), read in `tx`:
// UploadStore::find_previous()'s contract.
Result<std::optional<CommittedUpload>> find_previous_in(pqxx::transaction_base& tx, std::int64_t platform_id,
                                                        UploadKind kind, std::string_view key,
                                                        std::string_view body_sha256);

}  // namespace internal

struct UploadWriter::Impl {
  using Slice = internal::Slice;

  Impl(PgPool::Lease l, std::int64_t platform, UploadKind k);
  // Stops and joins the writer's thread, then rolls back unless committed.
  ~Impl();

  bool measurements() const { return kind == UploadKind::kMeasurements; }
  std::string what() const;

  // --- errors (upload_writer.cc) ---
  // Call only inside a catch block: the Status of the failure; the
  // connection is discarded when it is gone. Does not record it (record()).
  Status fail(std::string_view what_failed);
  // Makes `s` the writer's error (the first one wins) and returns it.
  Status record(Status s) EXCLUDES(mu);
  // OK while rows may still be added / committed.
  Status usable(std::string_view op) EXCLUDES(mu);

  // --- the caller's thread (upload_writer.cc) ---
  // Formats `row` into the filling slice; hands the slice over when full.
  Status add(const UploadRow& row) EXCLUDES(mu);
  // Hands the filling slice to the writer's thread (started on first use),
  // waiting while the one before is still queued.
  Status submit() EXCLUDES(mu);
  // Waits until the writer's thread has written everything handed to it;
  // after that, the calling thread may use the transaction. The error, if any.
  Status drain() EXCLUDES(mu);

  // --- the writer's thread (upload_writer.cc) ---
  // Writes the slices handed over, one at a time, until `stop`.
  void run() EXCLUDES(mu);

  // The functions below use the transaction: only one thread at a time runs
  // them (the writer's thread, or commit() after drain()). They throw.

  // --- COPY into staging, without the lock (upload_staging.cc) ---
  // Every slice before commit() is staged: the upload lock is a
  // transaction-level lock, held from the moment it is taken to the commit,
  // so taking it here let one slow upload (a slow link, a trickling client)
  // hold every other upload's commit for its whole life (issue 45, finding
  // 5). Only commit() takes it, for the merge.
  void write_slice(Slice& s) { stage(s); }
  // Into the staging table, with each row's workload key.
  void stage(const Slice& s);
  // Holding the lock: staged rows into the tables.
  void move_staged();

  // --- COPY straight into the tables, holding the lock (upload_direct.cc) ---
  // The slice's new rows, with their tasks and programs.
  void write_direct(const Slice& s);
  // The used programs of the slice that are not stored yet, with this
  // platform as their first; sets the standing of every used program.
  void write_programs(const Slice& s, const std::vector<std::uint8_t>& used, std::vector<internal::Standing>& standing);
  // Clears keep[i] for the rows whose dedup key is stored; returns how many.
  std::size_t drop_stored(const Slice& s, std::vector<std::uint8_t>& keep);
  // The tuples of the kept rows (the slice's own bytes when all are kept,
  // else gathered in `scratch`).
  std::string_view kept_tuples(const Slice& s, const std::vector<std::uint8_t>& keep);
  // Makes task_ids hold the id of the task of every needed program,
  // inserting the tasks that do not exist yet.
  void resolve_tasks(const Slice& s, const std::vector<std::uint8_t>& needed);
  std::int64_t task_of(const Slice& s, std::uint32_t program) const;

  // --- the kept counts (upload_counts.cc) ---
  void count_inserted(const Slice& s, const std::vector<std::uint8_t>& keep);
  // Adds what this upload inserted to its platform's counts (at commit,
  // holding the lock, so concurrent uploads add one after the other).
  void add_to_counts();
  // The programs of the inserted rows (keep[i]) become the platform's.
  void add_members(const Slice& s, const std::vector<std::uint8_t>& keep,
                   const std::vector<internal::Standing>& standing);
  // Programs that another platform stored first become this one's.
  void add_others(const Slice& s, const std::vector<std::uint32_t>& others, std::set<std::int64_t>& tasks);

  // --- the uploads row (upload_idempotency.cc), holding the lock ---
  // Inserts it (without its report); kFailedPrecondition when its key was
  // just taken (not expected: see there).
  Status insert_upload(std::string_view idempotency_key, std::string_view body_sha256);
  // Stores `report` and returns it as stored (jsonb's rendering).
  std::string store_report(const std::string& report);

  // Constant after begin().
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
  std::thread worker;  // started by submit(), joined by ~Impl

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
  core::Mutex mu;
  core::CondVar cv;
  std::unique_ptr<Slice> queued GUARDED_BY(mu);              // the next slice to write
  std::vector<std::unique_ptr<Slice>> spare GUARDED_BY(mu);  // written slices, for reuse
  bool busy GUARDED_BY(mu) = false;                          // the thread is writing a slice
  bool stop GUARDED_BY(mu) = false;
  Status error GUARDED_BY(mu);    // the first failure; not OK = dead
  std::atomic<bool> dead{false};  // error is set (usable() reads it without mu)
};

}  // namespace tcl::registry
