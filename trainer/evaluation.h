// trainer/evaluation.h — the ranking metrics of DESIGN §10, on plain arrays
// (torch-free: the sampler, the API and the benchmarks use them too).
//
// Inputs are parallel arrays over the programs of one platform: the group
// (task, >= 0) each program belongs to, its true mean latency (seconds, > 0; failed
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
//
// tuning proxy (DESIGN §10): per task of n programs, g of them "within 5% of
// the best" — label best/latency ≥ kTuningWithin (core/labels.h's y ≥ 0.95,
// the normalised throughput the top-k ratios use) —
//   ratio = T / ((n+1)/(g+1)),
// T = the trials until the first such program when the model's order is
// followed (programs with equal scores are tried in random order: T takes
// its expectation over that), (n+1)/(g+1) = E[T] in a random order. Tasks
// where all n qualify tell nothing and are left out. Over the tasks: the
// geometric mean of the ratios (< 1: fewer measurements than random), the
// share of tasks with ratio < 1, and the arithmetic mean. The random-order
// statistics come from kRandomOrderDraws random permutations of every task
// (a fixed seed: deterministic): the arithmetic mean is 1 in expectation by
// construction, the geometric mean is not (Jensen's inequality: ≈ 0.74 for
// g = 1, towards e^-γ ≈ 0.56 when T is nearly geometric, i.e. many qualify;
// 0.63 on x86-24c's held-out tasks), nor is the share 0.5 (0.5 for g = 1,
// towards 1 - 1/e ≈ 0.63) — the floor a model is held against.
// top-1 in sets (the promotion gate's, onboarding/distill.h): a task's
// top-1 is one argmax, which flips between near-equal programs, and that
// noise dominates a paired difference of two models. So each task's programs
// are dealt into k sets (the i-th program of the task, in input order, to set
// i mod k; k = clamp(n / kProgramsPerSet, 1, kMaxSets)), and top-1 is taken
// in each set against the set's best: mean_ratio = mean over tasks of the
// task's mean over its sets, sum_ratio = Σ best / Σ best_top1 over every
// set. A task under 2 · kProgramsPerSet programs is one set (plain top-1).
// 64 is also a measurement round of TVM's auto-scheduler: the pick a tuner
// makes among 64 candidates.
// Per task (per_task_ranking): the same quantities before they are pooled,
// so that two models scored on the same programs can be compared task by
// task (a paired difference: the tasks' own difficulty cancels).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tcl::trainer {

struct TopK {
  double sum_ratio = 0;
  double mean_ratio = 0;
};

inline constexpr double kTuningWithin = 0.95;  // "within 5% of the best", as a label
inline constexpr int kRandomOrderDraws = 64;

struct TuningProxy {
  double geomean_ratio = 0;  // exp(mean over tasks of log ratio); 0 when tasks == 0
  double share_better = 0;   // share of tasks with ratio < 1
  double mean_ratio = 0;     // arithmetic mean over tasks of the ratio
  double geomean_sd = 0;     // random orders: sample sd of geomean_ratio between draws (0 for a model)
  std::int64_t tasks = 0;    // tasks counted: ≥ 2 programs, not all within 5% of the best
};

inline constexpr std::int64_t kProgramsPerSet = 64;
inline constexpr std::int64_t kMaxSets = 8;

struct RankingMetrics {
  TopK top1, top5;
  TopK top1_in_sets;              // top1_in_sets() below
  TopK random_top1, random_top5;  // the random-order floor
  TuningProxy tuning, random_tuning;
  double pairwise_accuracy = 0;
  std::int64_t tasks = 0;          // tasks evaluated
  std::int64_t tasks_skipped = 0;  // tasks with < 2 programs
  std::int64_t programs = 0;
};

RankingMetrics evaluate_ranking(std::span<const std::int64_t> groups, std::span<const double> latencies,
                                std::span<const float> scores);

// One task of a ranking: the latencies top-1 compares and the tuning proxy's
// ratio. Over tasks: top-1 mean_ratio = mean of best / best_top1, sum_ratio =
// Σ best / Σ best_top1, the tuning geomean = exp(mean log tuning_ratio)
// over the tasks where it is counted — the values evaluate_ranking gives.
struct TaskRanking {
  std::int64_t group = 0;
  double best = 0;          // the lowest latency of the task
  double best_top1 = 0;     // the latency of the highest-scored program
  double tuning_ratio = 0;  // the tuning proxy's ratio; 0 when the task is not counted (all qualify)
  [[nodiscard]] double top1() const { return best / best_top1; }
};

// Every task with ≥ 2 programs, in first-seen order.
std::vector<TaskRanking> per_task_ranking(std::span<const std::int64_t> groups, std::span<const double> latencies,
                                          std::span<const float> scores);

// Each program's set: group · kMaxSets + (its rank in its task, in input
// order, mod k), k = clamp(n / kProgramsPerSet, 1, kMaxSets) for a task of n
// programs. groups >= 0.
std::vector<std::int64_t> set_groups(std::span<const std::int64_t> groups);

// One task of a ranking in sets (above): top-1 averaged over its sets, the
// best and top-1 latencies summed over them, the tuning ratio's geometric
// mean over the sets where it counts (0: none). The promotion gate pairs
// these task by task (onboarding/distill.h).
struct TaskInSets {
  std::int64_t group = 0;
  double top1 = 0, best = 0, best_top1 = 0, tuning_ratio = 0;
};

// Every task with a set of >= 2 programs, in first-seen order. groups >= 0.
std::vector<TaskInSets> per_task_in_sets(std::span<const std::int64_t> groups, std::span<const double> latencies,
                                         std::span<const float> scores);

// top-1 in sets of about kProgramsPerSet programs (above), pooled over
// per_task_in_sets: mean_ratio = mean of the tasks' top1, sum_ratio =
// Σ best / Σ best_top1. groups >= 0.
TopK top1_in_sets(std::span<const std::int64_t> groups, std::span<const double> latencies,
                  std::span<const float> scores);

// One k, for callers that need others (the tuning-cost curve).
TopK topk(std::span<const std::int64_t> groups, std::span<const double> latencies, std::span<const float> scores,
          int k);

// The tuning proxy alone: of the model's order, and of random orders
// (`draws` permutations per task from `seed`).
TuningProxy tuning_proxy(std::span<const std::int64_t> groups, std::span<const double> latencies,
                         std::span<const float> scores);
TuningProxy random_tuning_proxy(std::span<const std::int64_t> groups, std::span<const double> latencies,
                                int draws = kRandomOrderDraws, std::uint64_t seed = 0x5eed);

// An ensemble of rankers (a lever bench_quality measures): the mean of the members'
// scores after standardising each member within each task (z = (s - mean) /
// sd over the task's programs; a task where a member gives every program the
// same score contributes 0 for it), since a ranking model's scores carry an
// arbitrary offset and scale per run and per task. members: ≥ 1 score
// arrays, each parallel to `groups`.
std::vector<float> ensemble_scores(std::span<const std::int64_t> groups, std::span<const std::vector<float>> members);

}  // namespace tcl::trainer
