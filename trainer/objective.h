// trainer/objective.h — the loss of one training batch (internal to
// trainer/: torch): the label loss, plus, in a distillation, the KD terms
// and EWC of DistillTargets (train_job.h):
//   label_weight · L + column_weight · KD(S(x, h_k), C)
//   + old_weight · Σ_j f_j · KD(S(x, h_j), T_j) + ewc_weight · EWC
//   + feature_weight · Σ_j FD(E_S(x, h_j), E_T(x, h_j))   on the bank only
// f_j = old_weight_on_new_programs[j] on platform k's programs, 1 on the old
// platforms' bank. A batch of an unlabeled source has no label term. Without a distillation
// the loss is the label loss alone (no weight multiplies it).
//
// The label loss L (Optimisation::label_loss), within each group (chunk):
//   kLambdaRank  lambda_rank.h, gain label^gain_power;
//   kListwise    KL(softmax(β · y) ‖ softmax(s)), distill_loss.h's listwise
//                KD with the labels as the target's logits: the target puts
//                most of a group's mass near its best program (β = 20: a
//                program at 0.95 of the best gets e^-1 of the best's mass,
//                one at 0.8 e^-4).
//
// Thread-safety: needs exclusive use of the model (a forward in training mode).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "trainer/batches.h"
#include "trainer/lambda_rank.h"
#include "trainer/score_model.h"
#include "trainer/train_job.h"

namespace tcl::trainer {

// Where a training batch comes from: one platform's training split
// (labeled), or a distillation's unmeasured pool (unlabeled: KD terms only).
struct BatchSource {
  const Dataset* ds = nullptr;
  SplitTensors train = {};
  torch::Tensor descriptor = {};  // [1, D] on the device
  GroupRows groups = {};
  bool labeled = true;
  std::int64_t max_batches = -1;  // per epoch (a seeded share); -1 = all
  // The old platforms' bank: no column target, old KD at old_weight (not
  // scaled by old_weight_on_new_programs).
  bool old_bank = false;
  // Distillation targets per row of `train`: the active column's (empty =
  // none; never on the bank) and the teacher's under each old platform's
  // descriptor (empty where that term weighs nothing on this source).
  std::vector<float> column_target = {};
  std::vector<std::vector<float>> old_targets = {};
};

// A distillation's terms, ready on the device (trainer/distillation.h makes them).
struct DistillTerms {
  DistillTargets weights;                               // the weights and τ (its views unused here)
  std::vector<torch::Tensor> old_descriptors = {};      // [1, D] each, in DistillTargets order
  std::vector<torch::Tensor> fisher = {}, anchor = {};  // EWC: the teacher's F and θ_T; empty = no EWC
  std::shared_ptr<ScoreModel> teacher = {};             // T on the device, eval mode: feature KD's targets; null = none
  DistillLevers levers = {};                            // the factors on k's programs, the feature weight
};

struct LabelLossOptions {
  LabelLoss kind = LabelLoss::kLambdaRank;
  LambdaRankOptions lambda_rank = {};
  double listwise_beta = 20.0;
};
LabelLossOptions label_loss_options(const Optimisation& opt);

// L of a labeled batch's scores ([b], in batch order), a 0-dim tensor.
torch::Tensor label_loss(const torch::Tensor& scores, const Batch& batch, const LabelLossOptions& options);

// The weight of old platform j's KD term on a batch of a source: old_weight
// on the bank (old_bank), old_weight times old_weight_on_new_programs[j] on
// platform k's programs (its factors given).
double old_term_weight(const DistillTargets& w, const DistillLevers& levers, std::size_t j, bool old_bank);

// The loss of `batch` (gathered from src.train); `distill` null = the label loss only.
torch::Tensor batch_loss(ScoreModel& model, const BatchSource& src, const Batch& batch, const DistillTerms* distill,
                         const LabelLossOptions& loss_options);

}  // namespace tcl::trainer
