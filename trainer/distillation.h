// trainer/distillation.h — what a distillation (Distill in train_job.h)
// needs before its first step (internal to trainer/: torch): the teacher's
// and the active column's targets on every batch source, the unmeasured
// pool as a source of its own, the old platforms' descriptors, and the EWC
// anchor and Fisher.
//
// Targets are computed once, by the frozen teacher (under each old
// platform's descriptor) and the frozen column (under the new platform's),
// with the fast inference path for a student. The pool is used only when a
// KD term has a weight, unlabeled_ratio > 0 and max_unlabeled > 0; its tasks
// in the eval split are left out (build_unlabeled_dataset), and so are whole
// validation tasks (ValidationSplit::kTasks: no gradient from the tasks that
// judge the epochs). Its batches per epoch: ceil(unlabeled_ratio × the
// measured batches), at most all of its own. The old platforms' bank
// (DistillTargets::old_bank) is a source of its own the same way, read by
// the old-platform KD terms only (no column target), when old_weight > 0 and
// there are old platforms; none of its tasks is left out (they are not
// platform k's). With DistillLevers::feature_weight > 0 and a bank, the teacher itself is
// kept on the device (DistillTerms::teacher) for the feature term's targets;
// without a bank the weight is unused.
//
// Thread-safety: reads the model's parameters (the Fisher's shapes); call before training.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "trainer/objective.h"
#include "trainer/train_job.h"

namespace tcl::trainer {

struct DistillSetup {
  const Distill* distill = nullptr;
  const TrainData* data = nullptr;      // platform k's records and options
  const Dataset* dataset = nullptr;     // built from `data`: sources[0]'s
  const ModelConfig* config = nullptr;  // the student's (the teacher's)
  std::uint64_t seed = 0;               // the pool's sample seed
  BatchShape shape;
  torch::Device device = torch::kCPU;
};

// The datasets behind the sources prepare_distillation adds; they must
// outlive the sources.
struct DistillInputs {
  std::optional<Dataset> pool;      // platform k's unmeasured programs
  std::optional<Dataset> old_bank;  // the old platforms' programs
};

// Adds the pool and the bank to `sources` (their datasets kept in *inputs)
// and fills every source's targets; `model` is the student at its starting
// weights (the teacher's, or the column's with student_from_column); the EWC
// anchor is the teacher's. kInvalidArgument: a bad field (named), data the
// teacher cannot read, or student_from_column with a column of another
// config than the teacher's; the teacher's or column's load errors.
Result<DistillTerms> prepare_distillation(const DistillSetup& setup, ScoreModel& model,
                                          std::vector<BatchSource>* sources, DistillInputs* inputs);

// DistillLevers::teacher_mix after training: every floating parameter and
// buffer of `student` becomes (1 - teacher_mix) · its own + teacher_mix ·
// the teacher's, in place on the student's device. 0 leaves it as it is.
// kInvalidArgument: teacher_mix outside [0, 1] or a teacher of another
// layout; the teacher's load errors.
Status mix_with_teacher(ScoreModel& student, std::string_view teacher_checkpoint, double teacher_mix);

}  // namespace tcl::trainer
