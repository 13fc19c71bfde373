// trainer/lambda_rank.h — LambdaRank loss within groups (DESIGN §4). A group
// is one (task, platform): its programs are ranked against each other only.
//
// For every pair (i, j) in the same group with labels y_i > y_j:
//   loss_ij = |ΔNDCG_ij| · log(1 + exp(-σ (s_i - s_j)))
//   |ΔNDCG_ij| = |g_i - g_j| · |1/log2(1 + r_i) - 1/log2(1 + r_j)| / IDCG(group)
// with gain g = y^p (labels are in (0, 1]; p = gain_power, 1 = linear; a
// larger p gives the pairs near the task's best most of the weight: at
// p = 8 a program at 0.95 of the best gains 0.66, one at 0.8 gains 0.17), r the 1-based rank of a program in
// its group under the current scores (ties broken by batch position), and
// IDCG the group's DCG when ranked by label. With ndcg_at = k > 0, discounts
// past rank k are 0 (NDCG@k). The weights are constants (no gradient); the
// gradient flows through the logistic term only. The loss is the mean over
// groups of each group's summed pair losses, so groups do not interact.
//
// Cost: O(B²) time and memory for a batch of B programs (a few hundred).
// Thread-safety: pure function.
#pragma once

#include <torch/torch.h>

namespace tcl::trainer {

struct LambdaRankOptions {
  double sigma = 1.0;       // logistic slope; larger = sharper pairwise decisions
  int64_t ndcg_at = 0;      // truncate the NDCG weights at this rank; 0 = whole group
  double gain_power = 1.0;  // gain = label^gain_power (> 0)
};

// scores [B] floating (requires grad as needed); labels [B] in (0, 1];
// groups [B] integer group ids (any values; a group's members need not be
// contiguous). Returns a 0-dim tensor of scores' dtype; 0 when no group has
// two distinct labels. Throws c10::Error on mismatched shapes.
torch::Tensor lambda_rank_loss(const torch::Tensor& scores, const torch::Tensor& labels, const torch::Tensor& groups,
                               const LambdaRankOptions& options = {});

}  // namespace tcl::trainer
