// registry/upload_staging.cc — the first COPY strategy: every full slice,
// while the body streams and without the upload lock, COPied into a
// temporary staging table; commit() moves the staged rows into the tables
// with INSERT ... SELECT ... ON CONFLICT, holding the lock
// (upload_writer_internal.h has the whole picture).
#include <pqxx/pqxx>

#include <cstdint>

#include "registry/copy_codec.h"
#include "registry/upload_writer_internal.h"

namespace tcl::registry {
namespace {

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

// The tail both moves share, after their CTE `ins`: the programs of
// `moved` (a row source with program_id, aliased i) that another platform
// stored first become platform $1's, and so do their tasks new to it (as
// add_others does for rows written directly). Plain literals: a raw string
// inside a macro would keep its line splices.
#define TCL_NEW_TO_PLATFORM(moved)                                                                              \
  "new_programs AS (\n"                                                                                         \
  "  INSERT INTO platform_programs (platform_id, program_id, task_id)\n"                                        \
  "  SELECT $1, i.program_id, p.task_id FROM " moved                                                            \
  " JOIN programs p ON p.id = i.program_id\n"                                                                   \
  "  WHERE p.first_platform_id IS DISTINCT FROM $1\n"                                                           \
  "  ON CONFLICT DO NOTHING\n"                                                                                  \
  "  RETURNING task_id),\n"                                                                                     \
  "new_tasks AS (\n"                                                                                            \
  "  INSERT INTO platform_tasks (platform_id, task_id) SELECT DISTINCT $1::bigint, task_id FROM new_programs\n" \
  "  ON CONFLICT DO NOTHING\n"                                                                                  \
  "  RETURNING 1)\n"

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
)sql" TCL_NEW_TO_PLATFORM("(SELECT DISTINCT program_id FROM ins) i") R"sql(
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
)sql" TCL_NEW_TO_PLATFORM("ins i") R"sql(
SELECT (SELECT count(*) FROM ins), 0, (SELECT count(*) FROM new_programs), (SELECT count(*) FROM new_tasks)
)sql";

#undef TCL_NEW_TO_PLATFORM

}  // namespace

void UploadWriter::Impl::stage(const Slice& s) {
  if (!staging_created) {
    tx->exec0(measurements() ? kCreateMeasurementStaging : kCreateCandidateStaging);
    staging_created = true;
  }
  // Each tuple with one more field: its workload key.
  scratch.clear();
  for (std::size_t i = 0; i < s.rows(); ++i) {
    const std::string_view tuple = s.tuple(i);
    internal::begin_tuple(scratch, measurements() ? 10 : 5);
    scratch.append(tuple.substr(2));
    internal::field_bytes(scratch, *s.workload_keys[s.program_task[s.program[i]]]);
  }
  internal::copy_binary(*tx, measurements() ? kCopyMeasurementStaging : kCopyCandidateStaging, scratch);
  rows_in_staging += static_cast<std::int64_t>(s.rows());
}

void UploadWriter::Impl::move_staged() {
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

}  // namespace tcl::registry
