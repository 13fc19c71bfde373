// tests/onboarding/paired_scores_test.cc — evaluate_against_teacher
// (onboarding/distill.h) on real records (gpu-2080ti) with two untrained
// models: each task's top-1 is the mean over its sets of programs (i mod k,
// k = clamp(n / kProgramsPerSet, 1, kMaxSets)), recomputed here from the
// raw scores; a model against itself differs by nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/features.h"
#include "core/line_reader.h"
#include "core/program_id.h"
#include "core/task_split.h"
#include "onboarding/distill.h"
#include "trainer/cost_model.h"
#include "tests/lib/shared_data.h"

namespace tcl::onboarding {
namespace {

std::vector<core::Record> records(std::size_t n) { return testing::shared_data_records("gpu-2080ti", n); }

std::string checkpoint(std::uint64_t seed) {
  trainer::ModelConfig c;
  c.token_dim = core::kTokenDim;
  c.descriptor_dim = core::kHardwareDim;
  c.seed = seed;
  auto model = trainer::CostModel::create(c);
  EXPECT_TRUE(model.is_ok());
  auto bytes = (*model)->save();
  EXPECT_TRUE(bytes.is_ok());
  return *bytes;
}

// Top-1 of the programs `idx` under `scores`: the highest score, ties to the lower index.
double top1(const std::vector<std::size_t>& idx, const std::vector<double>& lat, const std::vector<float>& scores) {
  std::size_t pick = idx[0];
  double best = lat[idx[0]];
  for (std::size_t i : idx) {
    best = std::min(best, lat[i]);
    if (scores[i] > scores[pick]) pick = i;
  }
  return best / lat[pick];
}

TEST(PairedScoresTest, TopOneIsAveragedOverTheSetsOfEachTask) {
  const std::vector<core::Record> rs = records(4000);
  auto platform = trainer::platform_of(rs);
  ASSERT_TRUE(platform.is_ok());
  const std::string a = checkpoint(1), b = checkpoint(2);
  auto paired = evaluate_against_teacher(a, b, rs, *platform, 2);
  ASSERT_TRUE(paired.is_ok()) << paired.status().to_string();
  const std::string_view both[] = {a, b};
  auto scored = trainer::score_checkpoints(both, rs, *platform, 2);
  ASSERT_TRUE(scored.is_ok());

  // The tasks in order of first appearance, each with its programs.
  std::vector<std::vector<std::size_t>> tasks;
  std::vector<std::int64_t> group_of_task;
  for (std::size_t i = 0; i < scored->groups.size(); ++i) {
    if (group_of_task.empty() || group_of_task.back() != scored->groups[i]) {
      group_of_task.push_back(scored->groups[i]);
      tasks.emplace_back();
    }
    tasks.back().push_back(i);
  }
  ASSERT_EQ(paired->tasks.size(), tasks.size());
  bool some_split = false;
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    const auto n = static_cast<std::int64_t>(tasks[t].size());
    const std::int64_t k = std::clamp<std::int64_t>(n / kProgramsPerSet, 1, kMaxSets);
    some_split |= k > 1;
    double student = 0, teacher = 0;
    for (std::int64_t j = 0; j < k; ++j) {
      std::vector<std::size_t> set;
      for (std::int64_t p = j; p < n; p += k) set.push_back(tasks[t][static_cast<std::size_t>(p)]);
      student += top1(set, scored->latencies, scored->scores[0]) / static_cast<double>(k);
      teacher += top1(set, scored->latencies, scored->scores[1]) / static_cast<double>(k);
    }
    EXPECT_NEAR(paired->tasks[t].student.top1, student, 1e-12) << t;
    EXPECT_NEAR(paired->tasks[t].teacher.top1, teacher, 1e-12) << t;
    EXPECT_EQ(paired->task_keys[t], scored->task_keys[static_cast<std::size_t>(group_of_task[t])]);
  }
  EXPECT_TRUE(some_split);  // a task of ≥ 128 programs

  // A model against itself: the same values on every task, no difference.
  auto same = evaluate_against_teacher(a, a, rs, *platform, 2);
  ASSERT_TRUE(same.is_ok());
  const PlatformComparison c = comparison_of("p", false, "x", &*same);
  ASSERT_TRUE(c.student.has_value());
  EXPECT_EQ(c.student->top1_mean, c.teacher->top1_mean);
  EXPECT_EQ(c.top1_mean_se, 0);
  EXPECT_EQ(c.tasks, static_cast<std::int64_t>(tasks.size()));
}

// The lineage's per-platform figure (evaluate_standing_split): a model that
// did not change reads the same whether its version judged the platform on
// every task (an old platform in a distill) or on the standing split only
// (a train job, the new platform of a distill) — issue 46's 0.351 and 0.515
// of one unchanged model came from scoring it on two different sets.
TEST(PairedScoresTest, AnUnchangedModelReadsTheSameStandingSplitFigureOnEitherJudgedSet) {
  const std::vector<core::Record> rs = testing::shared_data_records("gpu-2080ti", 8000, 20);
  auto platform = trainer::platform_of(rs);
  ASSERT_TRUE(platform.is_ok());
  JudgedRecords every_task(false), standing_only(true);
  for (const auto& r : rs) {
    every_task.add(core::program_id(r), r);
    standing_only.add(core::program_id(r), r);
  }
  const std::vector<core::Record> old_platform = every_task.take(), train_job = standing_only.take();
  ASSERT_GT(old_platform.size(), train_job.size());
  const std::string model = checkpoint(1);
  auto as_old = evaluate_standing_split(model, old_platform, *platform, 2);
  auto as_trained = evaluate_standing_split(model, train_job, *platform, 2);
  ASSERT_TRUE(as_old.is_ok()) << as_old.status().to_string();
  ASSERT_TRUE(as_trained.is_ok()) << as_trained.status().to_string();
  EXPECT_GT(as_old->tasks, 0);
  EXPECT_EQ(as_old->tasks, as_trained->tasks);
  EXPECT_EQ(as_old->programs, as_trained->programs);
  EXPECT_EQ(as_old->top1.mean_ratio, as_trained->top1.mean_ratio);
  EXPECT_EQ(as_old->random_top1.mean_ratio, as_trained->random_top1.mean_ratio);
  // Every task's figure is another set's: not what the lineage compares.
  auto paired = evaluate_against_teacher(model, model, old_platform, *platform, 2);
  ASSERT_TRUE(paired.is_ok());
  EXPECT_GT(paired->student.tasks, as_old->tasks);

  // No task of the standing split measured: said, not a zero.
  std::vector<core::Record> outside;
  for (const auto& r : old_platform) {
    if (!core::in_holdout(core::canonical_workload_key(r.workload_key), 0.1, 0)) outside.push_back(r);
  }
  EXPECT_EQ(evaluate_standing_split(model, outside, *platform, 2).status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tcl::onboarding
