// trainer/fisher.h — the diagonal empirical Fisher information of a trained
// model (TrainResult::fisher) and its bytes (internal to trainer/: torch).
// The EWC term of the next distillation (distill_loss.h) weighs each
// parameter's drift by it.
//
//   F_i = c · Σ_b (∂ L(batch b) / ∂θ_i)²   over the batches given (L the
//   label loss, objective.h),
//   c such that the mean of F over every parameter is 1
// (so DistillTargets::ewc_weight means the same for every version; an
// all-zero F stays zero). Checked against per-batch gradients in
// tests/trainer/fisher_test.cc.
//
// Thread-safety: needs exclusive use of the model (it writes its gradients
// and leaves them zero).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "trainer/batches.h"
#include "trainer/objective.h"
#include "trainer/score_model.h"

namespace tcl::trainer {

// F per parameter tensor (the model's parameter order, its device), over
// `batches` of `split` scored under `descriptor` ([1, D]). Empty when
// `batches` is empty. The model's mode (train/eval) is left as it is.
// `done`, when given, is told the batches done so far after each one.
std::vector<torch::Tensor> diagonal_fisher(ScoreModel& model, const SplitTensors& split,
                                           const torch::Tensor& descriptor, const std::vector<ChunkBatch>& batches,
                                           const LabelLossOptions& loss,
                                           const std::function<void(std::size_t done)>& done = {});

// Float32 bytes of every tensor in order (TrainResult::fisher's format).
std::string fisher_bytes(const std::vector<torch::Tensor>& fisher);

// fisher_bytes back into tensors shaped as the model's parameters, on their
// device; kInvalidArgument when the size does not match the model.
Result<std::vector<torch::Tensor>> fisher_tensors(std::string_view bytes, ScoreModel& model);

}  // namespace tcl::trainer
