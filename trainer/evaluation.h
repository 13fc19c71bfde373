// trainer/evaluation.h — the ranking metrics of DESIGN §10, on plain arrays
// (torch-free: the sampler, the API and the benchmarks use them too).
//
// Inputs are parallel arrays over the programs of one platform: the group
// (task) each program belongs to, its true mean latency (seconds, > 0; failed
// measurements are left out by the caller) and the model's score (higher =
// predicted faster). Tasks with fewer than 2 programs carry no ranking signal
// and are skipped (counted in `tasks_skipped`).
//
// top-k (TenSet): per task, best = the lowest latency, best_topk = the lowest
// latency among the k highest-scored programs;
//   sum_ratio  = Σ w·best / Σ w·best_topk   (w = task weight, 1 here)
//   mean_ratio = mean over tasks of best / best_topk
// The sum ratio is dominated by the slowest tasks; DESIGN §10 asks for both,
// beside the random-order floor (the same quantities in expectation when the
// k programs are drawn at random, computed exactly).
// pairwise accuracy: over pairs in the same task with different latencies,
// the fraction ordered right by the scores (ties in score count half).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>

namespace tcl::trainer {

struct TopK {
  double sum_ratio = 0;
  double mean_ratio = 0;
};

struct RankingMetrics {
  TopK top1, top5;
  TopK random_top1, random_top5;  // the random-order floor
  double pairwise_accuracy = 0;
  std::int64_t tasks = 0;          // tasks evaluated
  std::int64_t tasks_skipped = 0;  // tasks with < 2 programs
  std::int64_t programs = 0;
};

RankingMetrics evaluate_ranking(std::span<const std::int64_t> groups, std::span<const double> latencies,
                                std::span<const float> scores);

// One k, for callers that need others (the tuning-cost curve).
TopK topk(std::span<const std::int64_t> groups, std::span<const double> latencies, std::span<const float> scores,
          int k);

}  // namespace tcl::trainer
