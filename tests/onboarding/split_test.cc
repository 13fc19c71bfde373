// tests/onboarding/split_test.cc — the evaluation protocol's split
// (onboarding/split.h) on real records (gpu-2080ti): held-out tasks by
// core::in_holdout, one pool record per program, tasks in order of first
// appearance, the held-out split alone when the pool is not kept; the
// validation split carved from the pool.
#include "onboarding/split.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/line_reader.h"
#include "core/program_id.h"
#include "core/task_split.h"
#include "tests/lib/shared_data.h"

namespace tcl::onboarding {
namespace {

std::vector<core::Record> records(std::size_t n) { return testing::shared_data_records("gpu-2080ti", n); }

TEST(PlatformSplitTest, HeldOutTasksAndOneRecordPerProgramInThePool) {
  std::vector<core::Record> all = records(6000);
  std::vector<core::Record> twice = all;
  twice.insert(twice.end(), all.begin(), all.begin() + 500);  // the same programs again: dropped from the pool
  std::int64_t measured = 0;
  for (const auto& r : twice) measured += core::classify(r) == core::RecordClass::kMeasured;
  SplitBuilder b(0.3, 5);
  for (core::Record& r : twice) b.add(r);
  const PlatformSplit s = b.take();
  EXPECT_EQ(s.measured, measured);
  ASSERT_FALSE(s.pool.empty());
  ASSERT_FALSE(s.holdout.empty());
  EXPECT_EQ(static_cast<std::int64_t>(s.pool.size() + s.holdout.size()) + s.pool_duplicates, measured);
  EXPECT_GT(s.pool_duplicates, 0);
  std::set<std::string> programs, held;
  for (const auto& r : s.holdout) {
    const std::string key = core::canonical_workload_key(r.workload_key);
    EXPECT_TRUE(core::in_holdout(key, 0.3, 5)) << key;
    held.insert(key);
  }
  EXPECT_EQ(static_cast<std::int64_t>(held.size()), s.holdout_tasks);
  ASSERT_EQ(s.task.size(), s.pool.size());
  std::int32_t next_new = 0;
  for (std::size_t i = 0; i < s.pool.size(); ++i) {
    EXPECT_TRUE(programs.insert(core::program_id(s.pool[i])).second) << "program twice in the pool";
    EXPECT_EQ(s.task_keys[static_cast<std::size_t>(s.task[i])], core::canonical_workload_key(s.pool[i].workload_key));
    EXPECT_FALSE(core::in_holdout(s.task_keys[static_cast<std::size_t>(s.task[i])], 0.3, 5));
    EXPECT_LE(s.task[i], next_new);  // tasks numbered by first appearance
    if (s.task[i] == next_new) ++next_new;
  }
  EXPECT_EQ(static_cast<std::size_t>(next_new), s.task_keys.size());

  // Without the pool: the same held-out split, nothing else.
  std::vector<core::Record> again = all;
  SplitBuilder h(0.3, 5, /*keep_pool=*/false);
  for (core::Record& r : again) h.add(r);
  const PlatformSplit only = h.take();
  EXPECT_TRUE(only.pool.empty());
  EXPECT_TRUE(only.task_keys.empty());
  EXPECT_EQ(only.holdout_tasks, s.holdout_tasks);
  EXPECT_EQ(h.take().measured, 0);  // take() starts the builder empty
}

TEST(PlatformSplitTest, ValidationSplitTakesPoolTasksAndDropsTheHeldOutOnes) {
  std::vector<core::Record> all = records(6000);
  SplitBuilder b(0.3, 5);
  for (core::Record& r : all) b.add(r);
  const PlatformSplit s = b.take();
  std::set<std::string> pool_programs;
  for (const auto& r : s.pool) pool_programs.insert(core::program_id(r));

  const PlatformSplit v = validation_split(s, 0.4, 9);
  EXPECT_EQ(v.measured, s.measured);
  EXPECT_EQ(v.pool_duplicates, s.pool_duplicates);
  ASSERT_FALSE(v.pool.empty());
  ASSERT_FALSE(v.holdout.empty());
  // The pool's records, none lost or added, none of the held-out tasks'.
  EXPECT_EQ(v.pool.size() + v.holdout.size(), s.pool.size());
  std::set<std::string> scored_tasks;
  for (const auto& r : v.holdout) {
    const std::string key = core::canonical_workload_key(r.workload_key);
    EXPECT_FALSE(core::in_holdout(key, 0.3, 5)) << "a held-out task in the validation split: " << key;
    EXPECT_TRUE(core::in_holdout(key, 0.4, 9)) << key;
    EXPECT_TRUE(pool_programs.count(core::program_id(r)));
    scored_tasks.insert(key);
  }
  EXPECT_EQ(static_cast<std::int64_t>(scored_tasks.size()), v.holdout_tasks);
  EXPECT_EQ(v.task_keys.size() + scored_tasks.size(), s.task_keys.size());
  // The rest stays the pool, its tasks renumbered densely in their old order.
  ASSERT_EQ(v.task.size(), v.pool.size());
  std::int32_t next_new = 0;
  for (std::size_t i = 0; i < v.pool.size(); ++i) {
    const std::string& key = v.task_keys[static_cast<std::size_t>(v.task[i])];
    EXPECT_EQ(key, core::canonical_workload_key(v.pool[i].workload_key));
    EXPECT_FALSE(core::in_holdout(key, 0.4, 9));
    EXPECT_FALSE(scored_tasks.count(key));
    EXPECT_LE(v.task[i], next_new);
    if (v.task[i] == next_new) ++next_new;
  }
  EXPECT_EQ(static_cast<std::size_t>(next_new), v.task_keys.size());
}

}  // namespace
}  // namespace tcl::onboarding
