// tests/onboarding/judged_records_test.cc — what the promotion gate judges a
// platform on (onboarding/distill.h, JudgedRecords) on real records
// (gpu-2080ti): per task at most the cap, the lowest program ids, the same
// records whatever the order they stream in, measured ones only, every
// task or the standing split's only.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/line_reader.h"
#include "core/program_id.h"
#include "core/task_split.h"
#include "onboarding/distill.h"
#include "tests/lib/shared_data.h"

namespace tcl::onboarding {
namespace {

// n records, every `stride`-th of the file (more tasks than the first n).
std::vector<core::Record> records(std::size_t n, std::size_t stride = 1) {
  return testing::shared_data_records("gpu-2080ti", n, stride);
}

std::vector<std::string> ids_of(const std::vector<core::Record>& rs) {
  std::vector<std::string> ids;
  for (const auto& r : rs) ids.push_back(core::program_id(r));
  return ids;
}

TEST(JudgedRecordsTest, LowestIdsPerTaskWhateverTheOrder) {
  std::vector<core::Record> all = records(8000);
  ASSERT_GT(all.size(), 1000u);
  all.back().error_no = 4;  // a failed measurement is never kept
  constexpr std::int64_t kCap = 40;
  JudgedRecords judged(false, kCap);
  for (const auto& r : all) judged.add(core::program_id(r), r);
  const std::vector<core::Record> kept = judged.take();

  // Expected: per task, the kCap lowest ids of its measured records.
  std::map<std::string, std::vector<std::string>> by_task;
  for (const auto& r : all) {
    if (core::classify(r) == core::RecordClass::kMeasured) {
      by_task[core::canonical_workload_key(r.workload_key)].push_back(core::program_id(r));
    }
  }
  std::vector<std::string> expected;
  bool some_task_capped = false;
  for (auto& [key, ids] : by_task) {
    std::sort(ids.begin(), ids.end());
    some_task_capped |= static_cast<std::int64_t>(ids.size()) > kCap;
    ids.resize(std::min<std::size_t>(ids.size(), kCap));
    expected.insert(expected.end(), ids.begin(), ids.end());
  }
  ASSERT_TRUE(some_task_capped);
  EXPECT_EQ(ids_of(kept), expected);  // task by task (by key), each by id
  EXPECT_EQ(std::count(expected.begin(), expected.end(), core::program_id(all.back())), 0);

  // Shuffled input: the same records.
  std::shuffle(all.begin(), all.end(), std::mt19937(7));
  JudgedRecords again(false, kCap);
  for (const auto& r : all) again.add(core::program_id(r), r);
  EXPECT_EQ(ids_of(again.take()), expected);
}

TEST(JudgedRecordsTest, TheStandingSplitOnly) {
  const std::vector<core::Record> all = records(8000, 20);
  JudgedRecords judged(true, 1000000);
  for (const auto& r : all) judged.add(core::program_id(r), r);
  const std::vector<core::Record> kept = judged.take();
  std::int64_t in_split = 0;
  for (const auto& r : all) {
    in_split += core::classify(r) == core::RecordClass::kMeasured &&
                core::in_holdout(core::canonical_workload_key(r.workload_key), 0.1, 0);
  }
  ASSERT_GT(in_split, 0);
  EXPECT_EQ(static_cast<std::int64_t>(kept.size()), in_split);
  for (const auto& r : kept) EXPECT_TRUE(core::in_holdout(core::canonical_workload_key(r.workload_key), 0.1, 0));
}

}  // namespace
}  // namespace tcl::onboarding
