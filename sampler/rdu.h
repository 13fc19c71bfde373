// sampler/rdu.h — the RDU active-learning sampler (DESIGN §6): which
// candidate programs of a platform to measure next.
//
//   Pool (embeddings, uncertainty, task of each candidate; measured programs)
//     → task_quotas()       budget split over tasks (≥ min_per_task each)
//     → per task, greedy:   score = α·R + β·D + γ·U, each term in [0, 1]
//                           (after an optional random share of the quota)
//     → picks, task by task
//
// Terms, per task, with embeddings L2-normalized (a zero vector stays zero,
// its cosine with anything is 0):
//   R  Representativeness: mean cosine similarity of a candidate to its
//      k = min(knn, size - 1) nearest neighbours among the task's candidates
//      (k = 0 → R = 1). A task with more than kRduMaxReference candidates is
//      compared against a seeded random subset of kRduMaxReference of its own
//      candidates instead of all of them (cost bounded at size·2048·dim).
//   D  Diversity: min over what is already selected in the task (this
//      request's picks plus the measured programs of that task) of
//      (1 − cosine); 1 while nothing is selected. Updated after each pick.
//   U  Uncertainty: the caller's value (0 for all when none is given).
// Each term is min-max normalized within the task to [0, 1] (a constant term
// → 0.5 for all); R and U once over the whole task, D after every pick over
// the task's remaining candidates. The greedy pick is the argmax of the score;
// exact ties go to the larger seeded hash of the pool index, so the seed, not
// index order, decides them.
//
// Cost per task of size s with quota q and m measured programs:
// O(s·min(s, 2048)·dim) for R plus O(s·(m + q)·dim) for D; memory O(s·dim).
// One thread; no allocation per pick.
//
// Determinism: the same Pool and SampleOptions (seed included) give identical
// picks on every run and machine (fixed summation order, no FMA contraction,
// our own PRNG).
//
// Embeddings and uncertainty are computed by the caller through trainer/'s
// interface (the student's pooled state for the platform, MC-dropout spread)
// and passed in as spans; this folder calls core/ only.
//
// Thread-safety: pure functions; concurrent calls are safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tcl::sampler {

// Tasks larger than this use a seeded random reference subset of this many
// candidates for Representativeness.
inline constexpr int64_t kRduMaxReference = 2048;

// Names are the API's `strategy` values; order is free to change.
enum class Strategy {
  kRdu,     // α·R + β·D + γ·U with the request's weights
  kRandom,  // a seeded uniform sample per task (the baseline of §10)
  kR,       // Representativeness alone (ablation), weights (1, 0, 0)
  kD,       // Diversity alone, weights (0, 1, 0)
  kU,       // Uncertainty alone, weights (0, 0, 1)
  // What a tuner would measure (issue 50): the base's predicted-fast programs
  // spread by Diversity. The greedy of kRdu with Pool::predicted in U's place
  // (shifted to >= 0, then min-max normalized in the task as U is) and
  // weights (0, 1, 1): score = F + D.
  kFast,
  // A seeded uniform sample of the whole pool: no quotas, no minimum per task
  // (the unstratified baseline; kRandom is stratified by task_quotas).
  kUniform,
};

// What a request that names no strategy gets. kFast since issue 50's
// leave-one-platform-out study (docs/sampler.md): on its report splits it beat
// random's top-1 task-mean beyond the interval on the three GPUs and was
// within the interval on the two CPUs, the only rule never below random beyond
// it. Its cost, on two GPUs: the fine-tuned model orders the whole task
// worse (pairwise).
inline constexpr Strategy kDefaultStrategy = Strategy::kFast;

// "rdu", "random", "r", "d", "u", "fast", "uniform".
std::string_view strategy_name(Strategy strategy);
// The inverse of strategy_name(); nullopt for any other text (case-sensitive).
std::optional<Strategy> parse_strategy(std::string_view name);
// Whether the strategy reads a model's output (embeddings, uncertainty or
// predictions): false for kRandom and kUniform, which need no model version.
bool uses_model(Strategy strategy);

// α, β, γ of DESIGN §6: finite and >= 0, not all zero (for kRdu).
// Default r = 0: in the onboarding experiment (docs/benchmarks.md) weighting
// Representativeness pulled every selection toward a task's dense middle and
// away from the fast tail that top-1 is about; without it rdu beat random at
// 10% on x86-16c and gpu-2080ti on two task splits it was not chosen on
// (salts 6, 7), and lost with it. R stays available per request.
struct Weights {
  double r = 0.0, d = 1.0, u = 1.0;
};

// The candidates of one platform. Borrowed: the spans must stay live for the
// call only; nothing is kept.
struct Pool {
  int64_t count = 0;                   // n candidates, >= 1
  int64_t dim = 0;                     // embedding width, >= 1
  std::span<const float> embeddings;   // n·dim, row-major, finite (the student's pooled state for this platform)
  std::span<const float> uncertainty;  // n values, finite and >= 0; or empty (then U = 0 for all)
  std::span<const float> predicted;    // n finite scores of the base (higher: predicted faster); kFast only
  std::span<const int32_t> task;       // n task indices in [0, num_tasks)
  int32_t num_tasks = 0;               // >= 1; a task may have no candidate
  // Already-measured programs of the same tasks (optional): they count as
  // "already selected" for Diversity, so a new round spreads away from them.
  // They are never picked and do not take part in R.
  int64_t measured_count = 0;
  std::span<const float> measured_embeddings;  // measured_count·dim, finite
  std::span<const int32_t> measured_task;      // measured_count, in [0, num_tasks)
};

struct SampleOptions {
  int64_t budget = 0;                  // programs to pick, 1..count
  Strategy strategy = Strategy::kRdu;  // the greedy's own; a request's default is kDefaultStrategy
  Weights weights;                     // used by kRdu only; kR/kD/kU use (1,0,0)/(0,1,0)/(0,0,1)
  uint64_t seed = 0;                   // tie-breaks, kRandom's sample, R's reference subsets
  int32_t min_per_task = 2;            // >= 0; every task gets min(min_per_task, its size)
  int32_t knn = 10;                    // >= 0; neighbours for Representativeness
  // In [0, 1]; for kRdu, kR, kD and kU: round(random_share·quota) of each
  // task's picks are random's own draw for that task and seed (the first ones
  // kRandom would take), and the greedy fills the rest, spreading away from
  // them (they count as selected for D). 0: all greedy; 1: kRandom's picks.
  // Why: the greedy alone leans to a task's slow outliers (docs/benchmarks.md).
  double random_share = 0.0;
  // Not owned; null: never. Read between tasks and between a task's picks:
  // once true, select() stops with kCancelled (the client that asked left).
  const std::atomic<bool>* cancel = nullptr;
};

struct Pick {
  int64_t index;  // into the pool
  int32_t task;
  double r, d, u;  // normalized terms at the moment of the pick (NaN for kRandom)
  double score;    // weights·terms (NaN for kRandom)
};

// Picks options.budget distinct candidates. OK: exactly budget picks, task
// quotas as task_quotas(sizes, budget, min_per_task) returns (kUniform: as its
// draw falls), ordered by task index ascending and, within a task, in pick
// order (kRandom and kUniform: all of them in the order of the seeded
// shuffle; otherwise the random share so, its terms NaN as kRandom's, then
// the greedy picks; kFast's Pick::u is its normalized F).
// kInvalidArgument, with a message naming the parameter and why, for: an empty
// pool (count < 1), dim < 1, num_tasks < 1, spans whose sizes disagree with
// count/dim/measured_count, a task index out of range, negative or non-finite
// uncertainty, non-finite embeddings, budget < 1 or > count, negative
// min_per_task or knn, random_share outside [0, 1], negative or non-finite weights or all-zero weights for
// kRdu, an unknown strategy, kFast without `predicted` (or non-finite values
// in it), and a budget smaller than the sum of per-task
// minimums (the message gives the minimum budget needed). kCancelled when
// options.cancel became true.
Result<std::vector<Pick>> select(const Pool& pool, const SampleOptions& options);

// The per-task quotas select() uses (exposed for tests and for the API's
// explanation): every task gets base = min(min_per_task, size); the rest of
// the budget is split in proportion to task sizes by largest remainder (ties
// to the lower task index), never above a task's size (a task that would
// overflow is filled and the rest re-split among the others). OK: one quota
// per task, summing to budget, each in [base, size].
// kInvalidArgument for a negative size, sizes summing to more than 2^31,
// negative min_per_task, budget < 1 or > the sum of sizes, or budget below the
// sum of bases (the message gives that minimum).
Result<std::vector<int64_t>> task_quotas(std::span<const int64_t> task_sizes, int64_t budget, int32_t min_per_task);

}  // namespace tcl::sampler
