#include "trainer/evaluation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "core/task_split.h"

namespace tcl::trainer {
namespace {

TEST(EvaluationTest, PerfectAndReversedRankings) {
  // Two tasks; latencies 1..4 and 10..30.
  const std::vector<std::int64_t> g = {7, 7, 7, 7, 9, 9, 9};
  const std::vector<double> lat = {4, 1, 3, 2, 30, 10, 20};
  std::vector<float> perfect(lat.size()), reversed(lat.size());
  for (std::size_t i = 0; i < lat.size(); ++i) {
    perfect[i] = static_cast<float>(-lat[i]);
    reversed[i] = static_cast<float>(lat[i]);
  }
  const RankingMetrics p = evaluate_ranking(g, lat, perfect);
  EXPECT_DOUBLE_EQ(p.top1.sum_ratio, 1.0);
  EXPECT_DOUBLE_EQ(p.top1.mean_ratio, 1.0);
  EXPECT_DOUBLE_EQ(p.pairwise_accuracy, 1.0);
  EXPECT_EQ(p.tasks, 2);

  const RankingMetrics r = evaluate_ranking(g, lat, reversed);
  // top-1 picks the slowest: task 7 → 1/4, task 9 → 10/30.
  EXPECT_DOUBLE_EQ(r.top1.mean_ratio, (1.0 / 4 + 10.0 / 30) / 2);
  EXPECT_DOUBLE_EQ(r.top1.sum_ratio, (1.0 + 10) / (4 + 30));
  // top-5 covers every program of both tasks.
  EXPECT_DOUBLE_EQ(r.top5.mean_ratio, 1.0);
  EXPECT_DOUBLE_EQ(r.pairwise_accuracy, 0.0);
}

TEST(EvaluationTest, SingletonTasksAreSkippedAndTiesCountHalf) {
  const std::vector<std::int64_t> g = {1, 2, 2};
  const std::vector<double> lat = {5, 1, 2};
  const std::vector<float> s = {0, 3, 3};
  const RankingMetrics m = evaluate_ranking(g, lat, s);
  EXPECT_EQ(m.tasks, 1);
  EXPECT_EQ(m.tasks_skipped, 1);
  EXPECT_DOUBLE_EQ(m.pairwise_accuracy, 0.5);
}

TEST(EvaluationTest, RandomFloorMatchesSimulation) {
  std::mt19937 rng(3);
  std::vector<std::int64_t> g;
  std::vector<double> lat;
  for (int t = 0; t < 5; ++t) {
    const int n = 3 + t * 4;
    for (int i = 0; i < n; ++i) {
      g.push_back(t);
      lat.push_back(1 + std::uniform_real_distribution<double>(0, 10)(rng));
    }
  }
  const RankingMetrics m = evaluate_ranking(g, lat, std::vector<float>(lat.size(), 0.f));
  // Monte Carlo over random scores.
  double mean1 = 0, mean5 = 0;
  const int trials = 4000;
  std::vector<float> s(lat.size());
  for (int r = 0; r < trials; ++r) {
    for (auto& x : s) x = std::uniform_real_distribution<float>(0, 1)(rng);
    mean1 += topk(g, lat, s, 1).mean_ratio;
    mean5 += topk(g, lat, s, 5).mean_ratio;
  }
  EXPECT_NEAR(m.random_top1.mean_ratio, mean1 / trials, 0.01);
  EXPECT_NEAR(m.random_top5.mean_ratio, mean5 / trials, 0.01);
  EXPECT_LT(m.random_top1.mean_ratio, m.random_top5.mean_ratio);
  EXPECT_LE(m.random_top5.mean_ratio, 1.0);
}

TEST(TaskSplitTest, StableFractionAndSalt) {
  int held = 0, held_salted = 0, both = 0;
  for (int i = 0; i < 4000; ++i) {
    const std::string key = "[\"task" + std::to_string(i) + "\", 1, 64]";
    const bool a = core::in_holdout(key, 0.25);
    const bool b = core::in_holdout(key, 0.25, 42);
    EXPECT_EQ(a, core::in_holdout(key, 0.25));  // deterministic
    held += a;
    held_salted += b;
    both += a && b;
  }
  EXPECT_NEAR(held / 4000.0, 0.25, 0.03);
  EXPECT_NEAR(held_salted / 4000.0, 0.25, 0.03);
  EXPECT_NEAR(both / 4000.0, 0.0625, 0.02);  // independent splits
  // Same value as SQL's tcl_split_hash: the first 8 bytes of sha256("abc") = ba7816bf8f01cfea.
  EXPECT_EQ(core::task_split_hash("abc"), static_cast<std::int64_t>(0xba7816bf8f01cfeaULL));
}

}  // namespace
}  // namespace tcl::trainer
