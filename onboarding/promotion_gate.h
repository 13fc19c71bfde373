// onboarding/promotion_gate.h — whether a distilled version takes over
// `production` (DESIGN §5).
//
// What is compared: per platform the version (student) and its teacher on
// the SAME tasks and programs (a paired comparison), task by task
// (TaskValues, made by onboarding/distill.h): top-1 as the mean over tasks
// of best / best-in-top-1 (task-mean), top-1 as Σ best / Σ best-in-top-1
// (sum, dominated by the slow tasks) and the tuning proxy (geometric mean
// over tasks of the trials-to-within-5% ratio against random order; lower
// is better). The paired per-task differences give standard errors far
// below those of two independent means: each task's difficulty cancels.
//
// The rule:
//   an old platform (one the teacher covers) blocks promotion when
//     - its top-1 task-mean falls by more than `margin` (point estimate), or
//     - its top-1 sum falls by more than max(`margin`, 2 se of that fall), or
//     - its tuning proxy rises by more than `tuning_margin`, relative
//       (student > teacher · (1 + tuning_margin), point estimate);
//   the new platform blocks unless its top-1 task-mean beats the teacher's
//   zero-shot task-mean (sum and proxy are reported, not judged: the
//   teacher never saw it);
//   no new platform among the compared ones blocks.
// Missing data is named, and blocks only on the new platform: an old
// platform not evaluated (no records), or a tuning proxy that counts no
// task (every program within 5% of the best), is said in the reasons and
// not judged.
//
// Why point estimates with a fixed margin, not a significance test: a
// test on a small split lets a large loss through for want of evidence
// (a version 0.10 worse on 319 unseen tasks passes on a 36-task split).
// The gate judges enough tasks instead (onboarding/distill.h: all of an old
// platform's, with top-1 averaged over sets of programs) that the task-mean
// and the proxy resolve their margins. Measured on x86-24c's 388 tasks
// (bench_gate): the paired se of the task-mean difference is 0.0033 between
// two trainings of the default job and 0.0069 between a teacher and a
// distilled student (2 se 0.007–0.014 against the margin 0.01); a reason
// whose 2 se exceed the margin says so. The sum is the exception: a few
// slow tasks carry it, and its paired se there is 0.012–0.016, so a fixed
// 0.01 would refuse about one version in four that lost nothing; a sum
// fall counts beyond 2 se. Default tuning_margin 0.10: the proxy's paired
// se is 1.3–2.4% (relative) on those tasks, so 10% is 4–8 se — a real rise,
// never noise — while forgetting along the continual sequence moved it by
// 26–98% (docs/continual.md).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tcl::onboarding {

inline constexpr double kDefaultTuningMargin = 0.10;

// One model's numbers on a platform's judged tasks.
struct ModelSummary {
  double top1_mean = 0;          // mean over tasks of best / best-in-top-1
  double top1_sum = 0;           // Σ best / Σ best-in-top-1
  std::optional<double> tuning;  // the tuning proxy's geometric mean; nullopt: no task counted
};

// One model on one task (trainer::TaskRanking, or its average over sets of
// the task's programs: onboarding/distill.h).
struct TaskValues {
  double top1 = 0;          // best / best-in-top-1
  double best = 0;          // the best latency (summed over the sets)
  double best_top1 = 0;     // the top-1 program's latency (summed over the sets)
  double tuning_ratio = 0;  // the tuning proxy's ratio; 0: not counted (every program within 5%)
};

// One task judged, the same programs scored by both models.
struct TaskPair {
  TaskValues teacher, student;
};

struct PlatformComparison {
  std::string platform;
  bool is_new = false;                           // the platform being onboarded
  std::string judged_on;                         // which tasks, in words ("all tasks", "the standing split")
  std::int64_t tasks = 0;                        // tasks judged
  std::int64_t tuning_tasks = 0;                 // of those, counted by the tuning proxy (for both models)
  std::optional<ModelSummary> teacher, student;  // nullopt: not evaluated (no data)
  // Standard errors of student − teacher, from the paired per-task values:
  double top1_mean_se = 0;   // of the task-mean difference
  double top1_sum_se = 0;    // of the sum-ratio difference (delta method)
  double tuning_log_se = 0;  // of the log of the proxy's geomean ratio student / teacher
};

// The comparison of `tasks` (both models' values per task, tasks with ≥ 2
// programs). No tasks: not evaluated (teacher and student nullopt).
PlatformComparison paired_comparison(std::string platform, bool is_new, std::string judged_on,
                                     std::span<const TaskPair> tasks);

struct GateDecision {
  bool promote = false;
  // One line per compared platform: the tasks judged, what was measured
  // (teacher -> student, differences ± se) and the verdict.
  std::vector<std::string> reasons;
  // Why the version is not promoted, short, one line per refusal in
  // `platforms` order (empty when promoted): "x (new): top-1 mean 0.41 on 3
  // held-out tasks, not above the teacher's zero-shot 0.46", "y: forgot
  // (top-1 mean fell 0.0213)". What `tclctl lineage` shows for a candidate.
  std::vector<std::string> blocking;
};

GateDecision promotion_decision(const std::vector<PlatformComparison>& platforms, double margin,
                                double tuning_margin = kDefaultTuningMargin);

}  // namespace tcl::onboarding
