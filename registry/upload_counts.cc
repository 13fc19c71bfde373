// registry/upload_counts.cc — the counts an upload keeps (migrations/0007):
// its inserted and failed rows, the programs and tasks that are new to its
// platform (platform_programs, platform_tasks), and at commit, holding the
// upload lock, their sum added to platform_counts, so a rolled-back or
// replayed upload adds nothing (upload_writer_internal.h).
#include <pqxx/pqxx>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "registry/copy_codec.h"
#include "registry/upload_writer_internal.h"

namespace tcl::registry {
namespace {

using internal::append_array_element;
using internal::append_int;
using internal::begin_tuple;
using internal::copy_in_savepoint;
using internal::field_bytes;
using internal::field_int8;
using internal::Standing;

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

}  // namespace

void UploadWriter::Impl::count_inserted(const Slice& s, const std::vector<std::uint8_t>& keep) {
  for (std::size_t i = 0; i < s.rows(); ++i) {
    if (!keep[i]) continue;
    ++inserted;
    if (measurements() && s.failed[i]) ++failed;
  }
}

void UploadWriter::Impl::add_to_counts() {
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
void UploadWriter::Impl::add_members(const Slice& s, const std::vector<std::uint8_t>& keep,
                                     const std::vector<Standing>& standing) {
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
void UploadWriter::Impl::add_others(const Slice& s, const std::vector<std::uint32_t>& others,
                                    std::set<std::int64_t>& tasks) {
  if (!ask_members_first) {
    scratch.clear();
    for (std::uint32_t p : others) {
      begin_tuple(scratch, 3);
      field_int8(scratch, platform_id);
      field_bytes(scratch, *s.program_ids[p]);
      field_int8(scratch, task_of(s, p));
    }
    if (copy_in_savepoint(*tx, kCopyMembers, scratch)) {
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

}  // namespace tcl::registry
