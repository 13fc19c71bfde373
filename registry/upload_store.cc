#include "registry/upload_store.h"

#include <pqxx/pqxx>

#include <array>
#include <charconv>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "registry/pg_pool_internal.h"

namespace tcl::registry {
namespace {

// The staging table lives in the writer's transaction only (ON COMMIT DROP),
// so each connection has at most one and the name never clashes. Its rows
// (~2 kB: line + steps) stay uncompressed below 8 kB (toast_tuple_target):
// compressing what is read once and dropped cost ~15% of a commit. Large
// columns come first: pqxx 6.4 joins a row's fields right to left, copying the
// tail once per field.
//
// Row order: the INSERTs below read the staging table with a plain
// sequential scan, which returns a heap in insertion order (a temporary table
// is never scanned in parallel nor with synchronized scans), so stored ids
// follow add() order without sorting a wide upload (tested).
constexpr const char* kStagingTable = "tcl_upload_staging";
constexpr const char* kCreateMeasurementStaging =
    "CREATE TEMP TABLE tcl_upload_staging ("
    "record text NOT NULL, steps text NOT NULL, workload_key text NOT NULL, program_id text NOT NULL, "
    "costs float8[] NOT NULL, error_no integer NOT NULL, all_cost float8 NOT NULL, timestamp bigint NOT NULL"
    ") WITH (toast_tuple_target = 8160) ON COMMIT DROP";
constexpr const char* kCreateCandidateStaging =
    "CREATE TEMP TABLE tcl_upload_staging ("
    "record text NOT NULL, steps text NOT NULL, workload_key text NOT NULL, program_id text NOT NULL"
    ") WITH (toast_tuple_target = 8160) ON COMMIT DROP";
const std::array<std::string, 8> kMeasurementColumns = {"record",   "steps",    "workload_key", "program_id",
                                                        "costs",    "error_no", "all_cost",     "timestamp"};
const std::array<std::string, 4> kCandidateColumns = {"record", "steps", "workload_key", "program_id"};

// Advisory lock serialising commits per (platform, kind): the two-int key
// space is apart from the one-bigint key of the migrations lock. Holding it
// makes the idempotency re-check in commit() race-free and keeps concurrent
// uploads to one platform from deadlocking on each other's rows.
constexpr std::int32_t kUploadLockClass[2] = {0x54434c4d, 0x54434c43};  // "TCLM", "TCLC"

// Tasks and programs are shared by all platforms: every writer inserts them in
// key order, so two commits on different platforms that share new rows wait
// for each other instead of deadlocking.
//
// Existing rows are filtered out first, so only new programs pay for the
// jsonb parse (about 30 us per program). `OFFSET 0` keeps each NOT EXISTS a
// per-row primary-key probe: as an anti-join the planner may hash the whole
// table, which grows without bound while an upload does not.
constexpr const char* kInsertTasks = R"sql(
INSERT INTO tasks (workload_key)
SELECT d.workload_key
FROM (SELECT DISTINCT workload_key FROM tcl_upload_staging) d
WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.workload_key = d.workload_key OFFSET 0)
ORDER BY d.workload_key
ON CONFLICT (workload_key) DO NOTHING
)sql";

constexpr const char* kInsertPrograms = R"sql(
INSERT INTO programs (id, task_id, steps)
SELECT n.program_id, t.id, n.steps::jsonb
FROM (SELECT DISTINCT ON (s.program_id) s.program_id, s.workload_key, s.steps
      FROM tcl_upload_staging s
      WHERE NOT EXISTS (SELECT 1 FROM programs p WHERE p.id = s.program_id OFFSET 0)
      ORDER BY s.program_id) n
JOIN tasks t ON t.workload_key = n.workload_key
ORDER BY n.program_id
ON CONFLICT (id) DO NOTHING
)sql";

// The first of two equal rows wins; later ones, and rows stored before, are
// skipped by ON CONFLICT (the arbiter is the table's dedup key).
constexpr const char* kInsertMeasurements = R"sql(
WITH ins AS (
  INSERT INTO measurements (platform_id, program_id, upload_id, costs, error_no, all_cost, timestamp, record)
  SELECT $1, s.program_id, $2, s.costs, s.error_no, s.all_cost, s.timestamp, s.record
  FROM tcl_upload_staging s
  ON CONFLICT (platform_id, program_id, timestamp, costs) DO NOTHING
  RETURNING failed)
SELECT count(*), count(*) FILTER (WHERE failed) FROM ins
)sql";

constexpr const char* kInsertCandidates = R"sql(
WITH ins AS (
  INSERT INTO candidates (platform_id, program_id, upload_id, record)
  SELECT $1, s.program_id, $2, s.record
  FROM tcl_upload_staging s
  ON CONFLICT (platform_id, program_id) DO NOTHING
  RETURNING 1)
SELECT count(*), 0 FROM ins
)sql";

std::int32_t lock_object(std::int64_t platform_id) { return static_cast<std::int32_t>(platform_id & 0x7fffffff); }

void append_double(std::string& out, double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest form that reads back exactly
  out.append(buf, end);
}

template <typename Int>
void assign_int(std::string& out, Int v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.assign(buf, end);
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
    case UploadKind::kMeasurements:
      return "measurements";
    case UploadKind::kCandidates:
      return "candidates";
  }
  return "measurements";
}

// ---------------------------------------------------------------------------
// UploadWriter

struct UploadWriter::Impl {
  Impl(PgPool::Lease l, std::int64_t platform, UploadKind k)
      : lease(std::move(l)), platform_id(platform), kind(k) {}
  ~Impl() {
    // Closing the COPY and rolling back may fail on a dead connection; both
    // destructors swallow that. Order: stream, transaction, then the lease.
    stream.reset();
    tx.reset();
  }

  // Call only inside a catch block: records the failure (the writer is dead
  // from now on) and discards the connection when it is gone.
  Status fail(std::string_view what) {
    bool lost = false;
    Status s = internal::status_from_current_exception(what, &lost);
    if (lost || !lease.conn().is_open()) {
      lease.discard();
      if (s.code() != StatusCode::kUnavailable) {
        s = Status(StatusCode::kUnavailable, "database connection lost: " + s.message());
      }
    }
    error = s;
    return s;
  }

  // OK while rows may still be added / committed.
  Status usable(std::string_view op) const {
    if (!error.is_ok()) return error;
    if (finished) return Status::failed_precondition(std::string(op) + ": upload already committed");
    return Status::ok();
  }

  std::string what() const {
    return std::string(upload_kind_name(kind)) + " upload for platform " + std::to_string(platform_id);
  }

  PgPool::Lease lease;
  std::unique_ptr<pqxx::work> tx;         // open from begin() until commit or rollback
  std::unique_ptr<pqxx::stream_to> stream;  // COPY into the staging table, until commit()
  const std::int64_t platform_id;
  const UploadKind kind;
  std::int64_t staged = 0;
  Status error;           // first failure; not OK = dead
  bool finished = false;  // committed, or replayed and rolled back
  // Field buffers reused across add() calls.
  std::string costs_text, error_no_text, all_cost_text, timestamp_text;
};

UploadWriter::UploadWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

UploadWriter::~UploadWriter() = default;

Status UploadWriter::add(const UploadRow& row) {
  Impl& m = *impl_;
  if (Status s = m.usable("add"); !s) return s;
  try {
    if (m.kind == UploadKind::kMeasurements) {
      m.costs_text.assign(1, '{');
      for (std::size_t i = 0; i < row.costs.size(); ++i) {
        if (i > 0) m.costs_text += ',';
        append_double(m.costs_text, row.costs[i]);
      }
      m.costs_text += '}';
      assign_int(m.error_no_text, row.error_no);
      m.all_cost_text.clear();
      append_double(m.all_cost_text, row.all_cost);
      assign_int(m.timestamp_text, row.timestamp);
      *m.stream << std::tie(row.record, row.steps_json, row.workload_key, row.program_id, m.costs_text,
                            m.error_no_text, m.all_cost_text, m.timestamp_text);
    } else {
      *m.stream << std::tie(row.record, row.steps_json, row.workload_key, row.program_id);
    }
    ++m.staged;
    return Status::ok();
  } catch (...) {
    return m.fail("staging row " + std::to_string(m.staged + 1) + " of " + m.what());
  }
}

Result<CommittedUpload> UploadWriter::commit(
    std::string_view idempotency_key, std::string_view body_sha256,
    const std::function<std::string(std::int64_t upload_id, const UploadCounts&)>& make_report) {
  Impl& m = *impl_;
  if (Status s = m.usable("commit"); !s) return s;
  try {
    m.stream->complete();
    m.stream.reset();
    pqxx::work& tx = *m.tx;
    // The per-row probes below make the planner's cost estimates huge, which
    // would JIT-compile every statement (~150 ms each) for no gain.
    tx.exec0("SET LOCAL jit = off");
    const int k = m.kind == UploadKind::kMeasurements ? 0 : 1;
    tx.exec_params("SELECT pg_advisory_xact_lock($1, $2)", kUploadLockClass[k], lock_object(m.platform_id));

    // A concurrent retry may have committed while we streamed.
    auto previous = find_previous_in(tx, m.platform_id, m.kind, idempotency_key, body_sha256);
    if (!previous || previous->has_value()) {
      tx.abort();
      m.finished = true;
      if (!previous) {
        m.error = previous.status();
        return previous.status();
      }
      return std::move(**previous);
    }

    // First, so that the id exists for the rows (upload_id) and a clash on
    // the key is found before any shared row is written.
    std::int64_t upload_id = 0;
    try {
      upload_id = tx.exec_params1(
                        "INSERT INTO uploads (platform_id, kind, idempotency_key, body_sha256) "
                        "VALUES ($1, $2, NULLIF($3, ''), $4) RETURNING id",
                        m.platform_id, std::string(upload_kind_name(m.kind)), std::string(idempotency_key),
                        std::string(body_sha256))[0]
                      .as<std::int64_t>();
    } catch (const pqxx::unique_violation&) {
      // Only an upload of the other kind, committed while we waited, can
      // hold this (platform, key): the lock above covers our own kind.
      m.error = Status::failed_precondition("Idempotency-Key '" + std::string(idempotency_key) +
                                            "' was just used by another upload of this platform");
      return m.error;
    }
    tx.exec0(kInsertTasks);
    tx.exec0(kInsertPrograms);
    const pqxx::row inserted = tx.exec_params1(
        m.kind == UploadKind::kMeasurements ? kInsertMeasurements : kInsertCandidates, m.platform_id, upload_id);

    UploadCounts counts;
    counts.staged = m.staged;
    counts.inserted = inserted[0].as<std::int64_t>();
    counts.failed = inserted[1].as<std::int64_t>();
    counts.duplicates = counts.staged - counts.inserted;
    const std::string report = make_report(upload_id, counts);
    // Returned as stored (jsonb's rendering), so a replay answers byte for
    // byte what the first commit answered.
    std::string stored = tx.exec_params1("UPDATE uploads SET report = $2::jsonb WHERE id = $1 RETURNING report::text",
                                         upload_id, report)[0]
                             .as<std::string>();
    tx.commit();
    m.finished = true;
    return CommittedUpload{upload_id, std::move(stored), false};
  } catch (...) {
    return m.fail("committing " + m.what());
  }
}

// ---------------------------------------------------------------------------
// UploadStore

Result<std::optional<CommittedUpload>> UploadStore::find_previous(std::int64_t platform_id, UploadKind kind,
                                                                  std::string_view idempotency_key,
                                                                  std::string_view body_sha256) {
  const std::string what = "looking up earlier " + std::string(upload_kind_name(kind)) + " uploads";
  return internal::with_connection(
      pool_, what, [&](pqxx::connection& conn) -> Result<std::optional<CommittedUpload>> {
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
      if (kind == UploadKind::kMeasurements) {
        impl->tx->exec0(kCreateMeasurementStaging);
        impl->stream = std::make_unique<pqxx::stream_to>(*impl->tx, kStagingTable, kMeasurementColumns);
      } else {
        impl->tx->exec0(kCreateCandidateStaging);
        impl->stream = std::make_unique<pqxx::stream_to>(*impl->tx, kStagingTable, kCandidateColumns);
      }
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
  for (int attempt = 0;; ++attempt) {
    auto lease = pool_.acquire();
    if (!lease) return lease.status().with_context(what);
    try {
      pqxx::read_transaction tx(lease->conn());
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
    } catch (...) {
      bool lost = false;
      Status s = internal::status_from_current_exception(what, &lost);
      if (lost || !lease->conn().is_open()) {
        lost = true;
        lease->discard();
      }
      // Once the sink saw rows, a retry would repeat them: report instead.
      if (!lost || delivered > 0 || attempt > 0) return s;
    }
  }
}

}  // namespace tcl::registry
