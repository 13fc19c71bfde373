#include "trainer/evaluation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
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

// The tuning proxy's ratio of one task by brute force: every order of its
// programs that the scores allow (non-increasing score), each equally likely,
// averaging the position of the first program with best/latency >= 0.95.
double reference_ratio(const std::vector<double>& lat, const std::vector<float>& sc) {
  const double best = *std::min_element(lat.begin(), lat.end());
  std::vector<std::size_t> p(lat.size());
  std::iota(p.begin(), p.end(), std::size_t{0});
  double trials = 0, orders = 0;
  do {
    bool allowed = true;
    for (std::size_t j = 1; j < p.size(); ++j) allowed = allowed && sc[p[j - 1]] >= sc[p[j]];
    if (!allowed) continue;
    std::size_t t = 0;
    while (best / lat[p[t]] < 0.95) ++t;
    trials += static_cast<double>(t + 1);
    orders += 1;
  } while (std::next_permutation(p.begin(), p.end()));
  const auto g = std::count_if(lat.begin(), lat.end(), [&](double l) { return best / l >= 0.95; });
  return trials / orders / (static_cast<double>(lat.size() + 1) / static_cast<double>(g + 1));
}

TEST(TuningProxyTest, HandMadeTasks) {
  // Task 1: within 5% = label >= 0.95, so 1.052 (label 0.9506) qualifies; the
  // model tries 2 (no) then 1.052: T = 2 of n = 4, g = 2, E = 5/3 → 1.2.
  // Task 2: latency ties (two bests) and score ties: the top block {5, 5}
  // fails, then {5, 1} in random order: T = 2 + 3/2; n = 5, g = 2, E = 2 → 1.75.
  // Task 3: every program within 5% (2.05 → 0.976): left out. Task 4: one program.
  // Task 5: a perfect order: T = 1, E = 2 → 0.5.
  const std::vector<std::int64_t> g = {1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 4, 5, 5, 5};
  const std::vector<double> lat = {1, 1.052, 2, 3, 1, 5, 5, 5, 1, 2, 2.05, 7, 3, 1, 2};
  const std::vector<float> sc = {1, 3, 4, 0, 0, 2, 2, 1, 1, 0, 1, 0, -3, -1, -2};
  const TuningProxy p = tuning_proxy(g, lat, sc);
  EXPECT_EQ(p.tasks, 3);
  EXPECT_NEAR(p.geomean_ratio, std::cbrt(1.2 * 1.75 * 0.5), 1e-12);
  EXPECT_NEAR(p.mean_ratio, (1.2 + 1.75 + 0.5) / 3, 1e-12);
  EXPECT_NEAR(p.share_better, 1.0 / 3, 1e-12);
  EXPECT_EQ(p.geomean_sd, 0);
  EXPECT_NEAR(reference_ratio({1, 1.052, 2, 3}, {1, 3, 4, 0}), 1.2, 1e-12);
  EXPECT_NEAR(reference_ratio({1, 5, 5, 5, 1}, {0, 2, 2, 1, 1}), 1.75, 1e-12);
  // evaluate_ranking carries it, and a random floor over the same 3 tasks.
  const RankingMetrics m = evaluate_ranking(g, lat, sc);
  EXPECT_EQ(m.tuning.geomean_ratio, p.geomean_ratio);
  EXPECT_EQ(m.random_tuning.tasks, 3);
  EXPECT_GT(m.random_tuning.geomean_sd, 0);
  // Only single-program and all-qualifying tasks: nothing counted.
  const TuningProxy none =
      tuning_proxy(std::vector<std::int64_t>{3, 3, 4}, std::vector<double>{2, 2.05, 7}, std::vector<float>{0, 1, 0});
  EXPECT_EQ(none.tasks, 0);
  EXPECT_EQ(none.geomean_ratio, 0);
}

TEST(TuningProxyTest, MatchesBruteForceWithTies) {
  // Small tasks with many ties in latency and in score, against reference_ratio.
  std::mt19937 rng(11);
  std::vector<std::int64_t> g;
  std::vector<double> lat;
  std::vector<float> sc;
  std::vector<double> ratios;
  for (int t = 0; t < 60; ++t) {
    const int n = 2 + t % 6;
    std::vector<double> l(n);
    std::vector<float> s(n);
    for (int i = 0; i < n; ++i) {
      l[i] = 1.0 + 0.04 * std::uniform_int_distribution<int>(0, 5)(rng);
      s[i] = static_cast<float>(std::uniform_int_distribution<int>(0, 2)(rng));
      g.push_back(t);
      lat.push_back(l[i]);
      sc.push_back(s[i]);
    }
    const double best = *std::min_element(l.begin(), l.end());
    if (std::all_of(l.begin(), l.end(), [&](double x) { return best / x >= 0.95; })) continue;
    ratios.push_back(reference_ratio(l, s));
  }
  ASSERT_GT(ratios.size(), 20u);
  double log_sum = 0, sum = 0, better = 0;
  for (double r : ratios) {
    log_sum += std::log(r);
    sum += r;
    better += r < 1;
  }
  const double k = static_cast<double>(ratios.size());
  const TuningProxy p = tuning_proxy(g, lat, sc);
  EXPECT_EQ(p.tasks, static_cast<std::int64_t>(ratios.size()));
  EXPECT_NEAR(p.geomean_ratio, std::exp(log_sum / k), 1e-9);
  EXPECT_NEAR(p.mean_ratio, sum / k, 1e-9);
  EXPECT_NEAR(p.share_better, better / k, 1e-12);
}

TEST(TuningProxyTest, RandomOrdersMatchTheExactDistribution) {
  // One task, n = 10, g = 1: T is uniform on 1..10, E = 11/2.
  std::vector<std::int64_t> g(10, 0);
  std::vector<double> lat = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  double e_log = 0, share = 0;
  for (int t = 1; t <= 10; ++t) {
    e_log += std::log(t / 5.5) / 10;
    share += (t < 5.5) / 10.0;
  }
  const TuningProxy r = random_tuning_proxy(g, lat, 20000, 7);
  EXPECT_EQ(r.tasks, 1);
  EXPECT_NEAR(r.geomean_ratio, std::exp(e_log), 0.01);  // ≈ 0.75, not 1: Jensen
  EXPECT_NEAR(r.share_better, share, 0.01);
  EXPECT_NEAR(r.mean_ratio, 1.0, 0.01);
  EXPECT_GT(r.geomean_sd, 0.1);  // one task: the geometric mean of one draw is that draw's ratio
  // Seeded: the same draws again.
  EXPECT_EQ(random_tuning_proxy(g, lat, 20000, 7).geomean_ratio, r.geomean_ratio);
}

TEST(TuningProxyTest, RandomScoresLookLikeRandomOrders) {
  // Many tasks of assorted n and g: a model scoring at random is one draw of
  // the random-order statistics (arithmetic mean ≈ 1), equal scores give
  // ratio 1 on every task, the true order beats random on every task.
  std::mt19937 rng(5);
  std::vector<std::int64_t> g;
  std::vector<double> lat;
  for (int t = 0; t < 800; ++t) {
    const int n = 2 + t % 40;
    for (int i = 0; i < n; ++i) {
      g.push_back(t);
      lat.push_back(std::exp(std::uniform_real_distribution<double>(0, 1)(rng)));
    }
  }
  std::vector<float> random_scores(lat.size()), equal(lat.size(), 1.f), perfect(lat.size());
  for (auto& s : random_scores) s = std::uniform_real_distribution<float>(0, 1)(rng);
  for (std::size_t i = 0; i < lat.size(); ++i) perfect[i] = static_cast<float>(-lat[i]);
  const TuningProxy floor = random_tuning_proxy(g, lat);
  const TuningProxy model = tuning_proxy(g, lat, random_scores);
  ASSERT_GT(floor.tasks, 700);
  EXPECT_NEAR(floor.mean_ratio, 1.0, 0.02);
  EXPECT_LT(floor.geomean_ratio, 0.95);  // Jensen
  EXPECT_NEAR(model.mean_ratio, 1.0, 0.1);
  EXPECT_NEAR(model.geomean_ratio, floor.geomean_ratio, 4 * floor.geomean_sd);
  EXPECT_NEAR(model.share_better, floor.share_better, 0.06);
  const TuningProxy same = tuning_proxy(g, lat, equal);
  EXPECT_DOUBLE_EQ(same.geomean_ratio, 1.0);
  EXPECT_DOUBLE_EQ(same.share_better, 0.0);
  const TuningProxy best = tuning_proxy(g, lat, perfect);
  EXPECT_DOUBLE_EQ(best.share_better, 1.0);
  EXPECT_LT(best.geomean_ratio, floor.geomean_ratio - 10 * floor.geomean_sd);
}

TEST(EvaluationTest, PerTaskRankingPoolsToTheSameMetrics) {
  // Per-task values, pooled as the header says, give evaluate_ranking's
  // top-1 and tuning proxy; a singleton task is left out, as there.
  std::mt19937 rng(11);
  std::vector<std::int64_t> g;
  std::vector<double> lat;
  std::vector<float> sc;
  for (int t = 0; t < 60; ++t) {
    const int n = t == 7 ? 1 : 2 + t % 17;
    for (int i = 0; i < n; ++i) {
      g.push_back(100 + t);
      lat.push_back(std::exp(std::uniform_real_distribution<double>(0, 2)(rng)));
      sc.push_back(std::uniform_real_distribution<float>(0, 1)(rng));
    }
  }
  const std::vector<TaskRanking> tasks = per_task_ranking(g, lat, sc);
  const RankingMetrics m = evaluate_ranking(g, lat, sc);
  ASSERT_EQ(static_cast<std::int64_t>(tasks.size()), m.tasks);
  EXPECT_EQ(tasks.front().group, 100);
  double mean = 0, best = 0, top1 = 0, logs = 0;
  std::int64_t counted = 0;
  for (const TaskRanking& t : tasks) {
    EXPECT_NE(t.group, 107);
    mean += t.top1();
    best += t.best;
    top1 += t.best_top1;
    if (t.tuning_ratio > 0) {
      logs += std::log(t.tuning_ratio);
      ++counted;
    }
  }
  EXPECT_NEAR(mean / static_cast<double>(tasks.size()), m.top1.mean_ratio, 1e-12);
  EXPECT_NEAR(best / top1, m.top1.sum_ratio, 1e-12);
  EXPECT_EQ(counted, m.tuning.tasks);
  EXPECT_NEAR(std::exp(logs / static_cast<double>(counted)), m.tuning.geomean_ratio, 1e-12);
}

// top-1 in sets: a task of 130 programs is two sets (i mod 2), each judged
// against its own best; a task of 3 is one set, plain top-1.
TEST(EvaluationTest, TopOneInSetsJudgesEachSetAgainstItsBest) {
  std::vector<std::int64_t> g;
  std::vector<double> lat;
  std::vector<float> scores;
  for (int i = 0; i < 130; ++i) {  // latency 1 + i; the model puts program 10 first, then program 1
    g.push_back(3);
    lat.push_back(1.0 + i);
    scores.push_back(i == 10 ? 10.0f : i == 1 ? 5.0f : 0.0f);
  }
  for (double l : {2.0, 4.0, 8.0}) {  // the model picks 4
    g.push_back(0);
    lat.push_back(l);
    scores.push_back(l == 4.0 ? 1.0f : 0.0f);
  }
  const std::vector<std::int64_t> sets = set_groups(g);
  EXPECT_EQ(sets[0], 3 * kMaxSets);
  EXPECT_EQ(sets[1], 3 * kMaxSets + 1);
  EXPECT_EQ(sets[129], 3 * kMaxSets + 1);
  EXPECT_EQ(sets[130], 0);
  EXPECT_EQ(sets[132], 0);
  // Set 0 (even programs): best 1, pick 11. Set 1 (odd): best 2, pick 2. Task 0: best 2, pick 4.
  const TopK t = top1_in_sets(g, lat, scores);
  EXPECT_DOUBLE_EQ(t.mean_ratio, ((1.0 / 11 + 1.0) / 2 + 0.5) / 2);
  EXPECT_DOUBLE_EQ(t.sum_ratio, (1.0 + 2 + 2) / (11.0 + 2 + 4));
  const std::vector<TaskInSets> tasks = per_task_in_sets(g, lat, scores);  // first-seen order
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].group, 3);
  EXPECT_DOUBLE_EQ(tasks[0].top1, (1.0 / 11 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(tasks[0].best, 1.0 + 2);
  EXPECT_DOUBLE_EQ(tasks[0].best_top1, 11.0 + 2);
  EXPECT_EQ(tasks[1].group, 0);
  EXPECT_DOUBLE_EQ(tasks[1].top1, 0.5);
  const RankingMetrics m = evaluate_ranking(g, lat, scores);
  EXPECT_DOUBLE_EQ(m.top1_in_sets.mean_ratio, t.mean_ratio);
  EXPECT_DOUBLE_EQ(m.top1.mean_ratio, (1.0 / 11 + 0.5) / 2);  // one argmax per task
  // 127 programs are one set, 128 two; 576 and more at most kMaxSets (8).
  EXPECT_EQ(set_groups(std::vector<std::int64_t>(127, 1))[1], kMaxSets);
  EXPECT_EQ(set_groups(std::vector<std::int64_t>(128, 1))[1], kMaxSets + 1);
  const std::vector<std::int64_t> many = set_groups(std::vector<std::int64_t>(1000, 1));
  EXPECT_EQ(*std::max_element(many.begin(), many.end()), 2 * kMaxSets - 1);
  EXPECT_EQ(many[8], kMaxSets);
  // Tasks interleaved and numbered sparsely: each counts its own programs, in input order.
  std::vector<std::int64_t> mixed;
  for (int i = 0; i < 260; ++i) mixed.push_back(i % 2 == 0 ? 5 : 40);  // 130 programs each: 2 sets
  const std::vector<std::int64_t> dealt = set_groups(mixed);
  EXPECT_EQ(dealt[0], 5 * kMaxSets);
  EXPECT_EQ(dealt[1], 40 * kMaxSets);
  EXPECT_EQ(dealt[2], 5 * kMaxSets + 1);
  EXPECT_EQ(dealt[3], 40 * kMaxSets + 1);
}

TEST(EnsembleTest, StandardisesEachMemberWithinEachTask) {
  // Two tasks, interleaved. Member a ranks task 1 right on a huge scale;
  // member b ranks it wrong on a small one, and gives task 2 one score.
  const std::vector<std::int64_t> g{1, 2, 1, 2, 1};
  const std::vector<float> a{1000.f, 0.f, 2000.f, 1.f, 3000.f};
  const std::vector<float> b{0.3f, 5.f, 0.2f, 5.f, 0.1f};
  const std::vector<std::vector<float>> one{a}, both{a, b};
  // One member: its z-scores (task 1: -1.2247, 0, 1.2247; task 2: -1, 1).
  const std::vector<float> z = ensemble_scores(g, one);
  EXPECT_NEAR(z[0], -std::sqrt(1.5), 1e-5);
  EXPECT_NEAR(z[2], 0.0, 1e-5);
  EXPECT_NEAR(z[4], std::sqrt(1.5), 1e-5);
  EXPECT_NEAR(z[1], -1.0, 1e-5);
  EXPECT_NEAR(z[3], 1.0, 1e-5);
  // Both: task 1's opposite rankings cancel whatever their raw scales (a
  // plain mean of raw scores would keep a's order); b's constant task 2
  // adds nothing, so a's order there is halved, not lost.
  const std::vector<float> m = ensemble_scores(g, both);
  for (int i : {0, 2, 4}) EXPECT_NEAR(m[static_cast<std::size_t>(i)], 0.0, 1e-5) << i;
  EXPECT_NEAR(m[1], -0.5, 1e-5);
  EXPECT_NEAR(m[3], 0.5, 1e-5);
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
