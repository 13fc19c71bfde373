// The promotion gate on crafted per-task values: every rule, the paired
// statistics it reports and its stated reasons.
#include "onboarding/promotion_gate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace tcl::onboarding {
namespace {

// A task whose best latency is `best`, with top-1 (best / best_top1) and tuning ratio as given.
TaskValues task(double top1, double tuning = 0.5, double best = 1.0) {
  return TaskValues{top1, best, best / top1, tuning};
}

// n tasks with assorted top-1 around 0.85; the student's top-1 is the
// teacher's + `change` on every task, its tuning ratio the teacher's × `tuning_factor`.
std::vector<TaskPair> shifted(int n, double change, double tuning_factor = 1.0) {
  std::vector<TaskPair> out;
  for (int i = 0; i < n; ++i) {
    const double t = 0.80 + 0.1 * ((i * 7) % 10) / 10.0;
    const double r = 0.3 + 0.05 * (i % 9);
    out.push_back(TaskPair{task(t, r), task(t + change, r * tuning_factor)});
  }
  return out;
}

PlatformComparison old_one(const char* name, const std::vector<TaskPair>& tasks) {
  return paired_comparison(name, false, "every measured task", tasks);
}
PlatformComparison new_one(const char* name, double zero_shot, double student) {
  const std::vector<TaskPair> tasks(20, TaskPair{task(zero_shot), task(student)});
  return paired_comparison(name, true, "its standing split", tasks);
}

TEST(PromotionGateTest, PairedComparisonOfPerTaskValues) {
  // Two tasks, by hand: means, sum ratios, geomeans and the paired se.
  const std::vector<TaskPair> two = {TaskPair{task(0.8, 0.5, 1.0), task(0.9, 0.25, 1.0)},
                                     TaskPair{task(1.0, 2.0, 3.0), task(0.6, 1.0, 3.0)}};
  const PlatformComparison c = paired_comparison("a", false, "x", two);
  ASSERT_TRUE(c.teacher && c.student);
  EXPECT_EQ(c.tasks, 2);
  EXPECT_NEAR(c.teacher->top1_mean, 0.9, 1e-12);
  EXPECT_NEAR(c.student->top1_mean, 0.75, 1e-12);
  EXPECT_NEAR(c.teacher->top1_sum, 4.0 / (1.25 + 3.0), 1e-12);
  EXPECT_NEAR(c.student->top1_sum, 4.0 / (1.0 / 0.9 + 5.0), 1e-12);
  EXPECT_NEAR(*c.teacher->tuning, 1.0, 1e-12);  // sqrt(0.5 · 2)
  EXPECT_NEAR(*c.student->tuning, 0.5, 1e-12);  // sqrt(0.25 · 1)
  EXPECT_NEAR(c.top1_mean_se, 0.25, 1e-12);     // differences +0.1, -0.4: sd 0.3536 / sqrt 2
  EXPECT_NEAR(c.tuning_log_se, 0.0, 1e-12);     // both halve
  EXPECT_GT(c.top1_sum_se, 0);
  // A constant shift has no spread: se 0, whatever the tasks' own spread.
  EXPECT_NEAR(old_one("b", shifted(100, -0.005)).top1_mean_se, 0.0, 1e-12);
  // No tasks: not evaluated.
  EXPECT_FALSE(old_one("c", {}).student);
}

TEST(PromotionGateTest, TheSumRatioSeMatchesItsSpreadUnderResampling) {
  // The delta-method se of the sum-ratio difference against the spread of
  // the difference over bootstrap resamples of the tasks.
  std::mt19937 rng(3);
  std::vector<TaskPair> tasks;
  for (int i = 0; i < 300; ++i) {
    const double best = std::exp(std::uniform_real_distribution<double>(-3, 3)(rng));
    const double t = std::uniform_real_distribution<double>(0.5, 1)(rng);
    const double s = std::uniform_real_distribution<double>(0.5, 1)(rng);
    tasks.push_back(TaskPair{task(t, 0.5, best), task(s, 0.5, best)});
  }
  const PlatformComparison c = old_one("a", tasks);
  std::vector<double> diffs;
  for (int b = 0; b < 400; ++b) {
    std::vector<TaskPair> resample;
    for (std::size_t i = 0; i < tasks.size(); ++i) resample.push_back(tasks[rng() % tasks.size()]);
    const PlatformComparison r = old_one("a", resample);
    diffs.push_back(r.student->top1_sum - r.teacher->top1_sum);
  }
  double mean = 0, ss = 0;
  for (double d : diffs) mean += d / static_cast<double>(diffs.size());
  for (double d : diffs) ss += (d - mean) * (d - mean);
  const double spread = std::sqrt(ss / static_cast<double>(diffs.size() - 1));
  EXPECT_NEAR(c.top1_sum_se, spread, 0.2 * spread);
}

TEST(PromotionGateTest, PromotesWhenNothingIsForgottenAndTheNewPlatformIsLearned) {
  auto d = promotion_decision(
      {old_one("a", shifted(120, -0.004)), old_one("b", shifted(50, +0.01)), new_one("c", 0.60, 0.85)}, 0.01);
  EXPECT_TRUE(d.promote);
  ASSERT_EQ(d.reasons.size(), 3u);
  // The reason names the tasks, what was measured and the verdict.
  for (const char* part :
       {"a: 120 tasks (every measured task)", "top-1 mean 0.", "-0.0040 ± 0.0000 se", "sum 0.", "tuning proxy 0.",
        "+0.0% ± 0.0% se, 120 tasks", "margins 0.0100 top-1, 10% tuning proxy: kept"}) {
    EXPECT_NE(d.reasons[0].find(part), std::string::npos) << part << " in " << d.reasons[0];
  }
  EXPECT_NE(d.reasons[2].find("c (new): 20 tasks (its standing split)"), std::string::npos) << d.reasons[2];
  EXPECT_NE(d.reasons[2].find("learned"), std::string::npos) << d.reasons[2];
}

TEST(PromotionGateTest, ATaskMeanLossBeyondTheMarginBlocks) {
  const PlatformComparison c = new_one("c", 0.60, 0.85);
  // 0.011 on the mean is refused, 0.009 kept.
  auto lost = promotion_decision({old_one("a", shifted(200, -0.011)), c}, 0.01);
  EXPECT_FALSE(lost.promote);
  EXPECT_NE(lost.reasons[0].find("forgot (top-1 mean fell 0.0110"), std::string::npos) << lost.reasons[0];
  auto kept = promotion_decision({old_one("a", shifted(200, -0.009)), c}, 0.01);
  EXPECT_TRUE(kept.promote) << kept.reasons[0];
  EXPECT_NE(kept.reasons[0].find(": kept"), std::string::npos) << kept.reasons[0];
  // The margin is a setting: 0.02 lets the 0.011 loss through.
  EXPECT_TRUE(promotion_decision({old_one("a", shifted(200, -0.011)), c}, 0.02).promote);
}

TEST(PromotionGateTest, ASumOnlyLossBlocks) {
  // The slow tasks (best 100x) lose 0.05, the fast ones gain 0.01: the
  // task-mean is within the margin, the sum ratio is not.
  std::vector<TaskPair> tasks;
  for (int i = 0; i < 100; ++i) {
    const bool slow = i % 4 == 0;
    tasks.push_back(TaskPair{task(0.85, 0.5, slow ? 100 : 1), task(slow ? 0.80 : 0.86, 0.5, slow ? 100 : 1)});
  }
  const PlatformComparison a = old_one("a", tasks);
  ASSERT_GT(a.student->top1_mean, a.teacher->top1_mean - 0.01);
  ASSERT_LT(a.student->top1_sum, a.teacher->top1_sum - 0.01);
  auto d = promotion_decision({a, new_one("c", 0.6, 0.85)}, 0.01);
  EXPECT_FALSE(d.promote);
  EXPECT_NE(d.reasons[0].find("forgot (top-1 sum fell"), std::string::npos) << d.reasons[0];
  EXPECT_GT(a.teacher->top1_sum - a.student->top1_sum, 2 * a.top1_sum_se);
  EXPECT_EQ(d.reasons[0].find("top-1 mean fell"), std::string::npos) << d.reasons[0];
}

TEST(PromotionGateTest, ASumFallWithinItsNoiseDoesNotBlock) {
  // A few slow tasks move the sum both ways: a fall past the margin but
  // within 2 se is reported, not judged; past 2 se it blocks.
  std::mt19937 rng(1);
  bool found = false;
  for (int attempt = 0; attempt < 200 && !found; ++attempt) {
    std::vector<TaskPair> tasks;
    for (int i = 0; i < 100; ++i) {
      const double best = i % 10 == 0 ? 100 : 1;
      const double moved = std::uniform_real_distribution<double>(-0.08, 0.08)(rng);
      tasks.push_back(TaskPair{task(0.85, 0.5, best), task(0.85 + (i % 10 == 0 ? moved : 0.0), 0.5, best)});
    }
    const PlatformComparison a = old_one("a", tasks);
    const double fall = a.teacher->top1_sum - a.student->top1_sum;
    if (fall <= 0.01 || fall >= 2 * a.top1_sum_se || a.student->top1_mean < a.teacher->top1_mean - 0.01) continue;
    found = true;
    auto d = promotion_decision({a, new_one("c", 0.6, 0.85)}, 0.01);
    EXPECT_TRUE(d.promote) << d.reasons[0];
  }
  ASSERT_TRUE(found);
}

TEST(PromotionGateTest, ATuningProxyLossBlocks) {
  // top-1 unchanged; the proxy 12% worse is refused, 8% kept (default 10%).
  const PlatformComparison c = new_one("c", 0.60, 0.85);
  auto worse = promotion_decision({old_one("a", shifted(150, 0.0, 1.12)), c}, 0.01);
  EXPECT_FALSE(worse.promote);
  EXPECT_NE(worse.reasons[0].find("forgot (tuning proxy rose 12.0%)"), std::string::npos) << worse.reasons[0];
  EXPECT_TRUE(promotion_decision({old_one("a", shifted(150, 0.0, 1.08)), c}, 0.01).promote);
  // The proxy's margin is a setting too.
  EXPECT_TRUE(promotion_decision({old_one("a", shifted(150, 0.0, 1.12)), c}, 0.01, 0.15).promote);
  // A better (lower) proxy never blocks.
  EXPECT_TRUE(promotion_decision({old_one("a", shifted(150, 0.0, 0.5)), c}, 0.01).promote);
}

TEST(PromotionGateTest, TooFewTasksToResolveTheMarginIsSaid) {
  // Noisy per-task differences on 10 tasks: 2 se exceed the margin.
  std::vector<TaskPair> tasks;
  for (int i = 0; i < 10; ++i) tasks.push_back(TaskPair{task(0.85), task(i % 2 ? 0.90 : 0.80)});
  auto d = promotion_decision({old_one("a", tasks), new_one("c", 0.6, 0.85)}, 0.01);
  EXPECT_TRUE(d.promote);  // reported, not judged
  EXPECT_NE(d.reasons[0].find("too few tasks to resolve it"), std::string::npos) << d.reasons[0];
  auto many = promotion_decision({old_one("a", shifted(200, 0.0)), new_one("c", 0.6, 0.85)}, 0.01);
  EXPECT_EQ(many.reasons[0].find("too few tasks"), std::string::npos) << many.reasons[0];
}

TEST(PromotionGateTest, TheNewPlatformMustBeatZeroShot) {
  auto d = promotion_decision({old_one("a", shifted(50, 0.0)), new_one("c", 0.70, 0.70)}, 0.01);
  EXPECT_FALSE(d.promote);
  EXPECT_NE(d.reasons[1].find("not better than zero-shot"), std::string::npos) << d.reasons[1];
  // The new platform is not held to the old platforms' margins.
  EXPECT_TRUE(promotion_decision({old_one("a", shifted(50, 0.0)), new_one("c", 0.70, 0.71)}, 0.01).promote);
}

TEST(PromotionGateTest, MissingMetricsAreNamedNotBlocking) {
  // An old platform without data does not block, and says so.
  auto d = promotion_decision({old_one("a", {}), new_one("c", 0.5, 0.8)}, 0.01);
  EXPECT_TRUE(d.promote);
  EXPECT_NE(d.reasons[0].find("a: no evaluation data, not compared"), std::string::npos) << d.reasons[0];
  // A tuning proxy that counts no task (every program within 5%) is named, not judged.
  std::vector<TaskPair> flat = shifted(40, 0.0);
  for (TaskPair& p : flat) p.teacher.tuning_ratio = p.student.tuning_ratio = 0;
  auto no_proxy = promotion_decision({old_one("a", flat), new_one("c", 0.5, 0.8)}, 0.01);
  EXPECT_TRUE(no_proxy.promote);
  EXPECT_NE(no_proxy.reasons[0].find("tuning proxy: no task counted, not judged"), std::string::npos)
      << no_proxy.reasons[0];
  // The new platform without data blocks.
  EXPECT_FALSE(
      promotion_decision({old_one("a", shifted(40, 0.0)), paired_comparison("c", true, "x", {})}, 0.01).promote);
  // No new platform at all blocks.
  auto none = promotion_decision({old_one("a", shifted(40, 0.0))}, 0.01);
  EXPECT_FALSE(none.promote);
  EXPECT_EQ(none.reasons.back(), "no new platform among the compared ones");
}

}  // namespace
}  // namespace tcl::onboarding
