// trainer/distill_loss.h — the two distillation terms of DistillTargets
// (train_job.h) beside LambdaRank: listwise KD and EWC (internal to
// trainer/: torch). Checked against plain loops in
// tests/trainer/distill_loss_test.cc.
//
// Listwise KD over the chunks of a batch (rows of chunk k contiguous, in
// chunk order; chunks of fewer than 2 rows are skipped):
//   KD = 1/K · Σ_k Σ_i p_ki (log p_ki − log q_ki),
//   p_k = softmax(target_k / τ), q_k = softmax(scores_k / τ),
// i.e. KL(p_k ‖ q_k) averaged over the K chunks used (0 when none).
//
// EWC (elastic weight consolidation) around the anchor θ*:
//   EWC = Σ_i F_i (θ_i − θ*_i)²  over every parameter tensor.
//
// Feature KD (the old platforms' embeddings, ScoreModel::embed):
//   FD = Σ_b ‖e_b − t_b‖² / Σ_b ‖t_b‖²,
// the student's squared distance from the teacher's embeddings relative to
// their size, so that its weight does not depend on the embedding's scale.
//
// Thread-safety: pure functions of their tensors.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace tcl::trainer {

// scores, target: [b]; chunk_sizes sum to b; temperature τ > 0. Differentiable in scores.
torch::Tensor listwise_kd(const torch::Tensor& scores, const torch::Tensor& target,
                          const std::vector<std::int64_t>& chunk_sizes, double temperature);

// embedding, target: [b, d], the same shape (c10::Error otherwise); target is
// a constant (no gradient flows into it). 0 when the target is all zeros.
// Differentiable in embedding.
torch::Tensor feature_kd(const torch::Tensor& embedding, const torch::Tensor& target);

// parameters, anchor and fisher: the same shapes, tensor by tensor. A scalar
// on the parameters' device, differentiable in the parameters.
torch::Tensor ewc_penalty(const std::vector<torch::Tensor>& parameters, const std::vector<torch::Tensor>& anchor,
                          const std::vector<torch::Tensor>& fisher);

}  // namespace tcl::trainer
