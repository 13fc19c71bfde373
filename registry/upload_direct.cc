// registry/upload_direct.cc — the second COPY strategy: at commit, holding
// the upload lock, the last (partial) slice's new rows go straight into the
// tables with their tasks and programs; rows and programs stored before are
// found by a unique index rejecting the COPY (in a savepoint), or by asking
// first (upload_writer_internal.h has the whole picture).
#include <pqxx/pqxx>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "registry/copy_codec.h"
#include "registry/upload_writer_internal.h"

namespace tcl::registry {
namespace {

using internal::append_array_element;
using internal::append_hex;
using internal::append_int;
using internal::begin_tuple;
using internal::copy_binary;
using internal::copy_in_savepoint;
using internal::DedupKey;
using internal::DedupKeyHash;
using internal::field_bytes;
using internal::field_int8;
using internal::Standing;
using internal::uuid_to_key;

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

}  // namespace

void UploadWriter::Impl::write_direct(const Slice& s) {
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
  if (ask_rows_first || !copy_in_savepoint(*tx, copy_rows, kept_tuples(s, keep))) {
    ask_rows_first = drop_stored(s, keep) > 0;
    copy_binary(*tx, copy_rows, kept_tuples(s, keep));
  }
  count_inserted(s, keep);
  add_members(s, keep, standing);
}

void UploadWriter::Impl::write_programs(const Slice& s, const std::vector<std::uint8_t>& used,
                                        std::vector<Standing>& standing) {
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
    if (copy_in_savepoint(*tx, kCopyPrograms, scratch)) {
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

std::size_t UploadWriter::Impl::drop_stored(const Slice& s, std::vector<std::uint8_t>& keep) {
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

std::string_view UploadWriter::Impl::kept_tuples(const Slice& s, const std::vector<std::uint8_t>& keep) {
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

void UploadWriter::Impl::resolve_tasks(const Slice& s, const std::vector<std::uint8_t>& needed) {
  if (task_ids.size() > internal::kMaxCachedTasks) task_ids.clear();  // before looking: the slice's ids must stay
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

std::int64_t UploadWriter::Impl::task_of(const Slice& s, std::uint32_t program) const {
  return task_ids.at(*s.workload_keys[s.program_task[program]]);
}

}  // namespace tcl::registry
