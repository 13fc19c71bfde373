// onboarding/distill.h — folding a platform into the lineage (DESIGN §5):
// the plan of a distill job (what the student learns from besides the
// platform's measurements) and the evaluation of the distilled version
// against its teacher on each platform it covers, which the promotion gate
// (promotion_gate.h) then reads. The job worker (daemon/job_worker.cc) reads
// the data through registry/ and trains through trainer/; these are the
// steps between, plain functions over that data.
//
// Pure functions (evaluate_on_split runs the models on the CPU); thread-safe.
// Torch-free header.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/record.h"
#include "core/status.h"
#include "onboarding/promotion_gate.h"
#include "trainer/evaluation.h"
#include "trainer/train_job.h"

namespace tcl::onboarding {

// The teacher's platforms other than `platform`: those the student must not forget.
std::vector<std::string> old_platforms(const std::vector<std::string>& teacher_platforms, const std::string& platform);

// The platforms a version made from `teacher_platforms` (empty for a train
// job) covers: those, then `platform` when it is not among them.
std::vector<std::string> covered_platforms(std::vector<std::string> teacher_platforms, const std::string& platform);

// What a distillation learns from besides the platform's measurements. Views:
// what they point at must outlive the plan.
struct DistillSources {
  std::string_view column_checkpoint;               // the active column (the teacher fine-tuned on the platform)
  std::string_view teacher_fisher;                  // empty: no EWC
  std::vector<std::vector<float>> old_descriptors;  // of old_platforms(), in order
  std::span<const core::Record> unlabeled;          // the unmeasured pool: KD-only inputs
};

// Whether the unmeasured pool is read at all: `weights` ask for unlabeled inputs.
bool wants_unlabeled(const trainer::DistillTargets& weights);

// The targets of the student: the loss weights, temperature and unlabeled
// ratio and cap of `weights`, with the sources.
trainer::DistillTargets plan_distillation(const trainer::DistillTargets& weights, DistillSources sources);

// The active column's training when none fits the teacher: the job's
// `request` (data, model, schedule) fine-tuned from `teacher` (its checkpoint
// and auto_schedule), `epochs` epochs,
// no Fisher (the column is never distilled from), no per-epoch evaluation.
trainer::TrainRequest column_request(trainer::TrainRequest request, const trainer::FineTune& teacher, int epochs);

struct SplitScores {
  trainer::RankingMetrics student, teacher;
};

// A version and its teacher (checkpoint bytes) on one platform's standing
// evaluation split: `records` are the platform's records of that split's
// tasks (trainer::TrainRequest::default_data_options()). Errors:
// trainer::evaluate_checkpoint's.
Result<SplitScores> evaluate_on_split(std::string_view student, std::string_view teacher,
                                      std::span<const core::Record> records, const trainer::Platform& platform,
                                      int threads);

// What the promotion gate compares for one platform: top-1 (mean over tasks)
// of the student and the teacher; `scores` null: not evaluated (no data).
PlatformComparison comparison_of(const std::string& platform, bool is_new, const SplitScores* scores);

}  // namespace tcl::onboarding
