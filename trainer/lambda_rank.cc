// trainer/lambda_rank.cc — vectorised over the whole batch with [B, B] pair
// matrices masked to same-group pairs; no loop over groups.
#include "trainer/lambda_rank.h"

namespace tcl::trainer {

torch::Tensor lambda_rank_loss(const torch::Tensor& scores, const torch::Tensor& labels, const torch::Tensor& groups,
                               const LambdaRankOptions& options) {
  TORCH_CHECK(scores.dim() == 1, "lambda_rank_loss: scores must be [B], got ", scores.sizes());
  TORCH_CHECK(labels.sizes() == scores.sizes(), "lambda_rank_loss: labels ", labels.sizes(), " != scores ",
              scores.sizes());
  TORCH_CHECK(groups.sizes() == scores.sizes(), "lambda_rank_loss: groups ", groups.sizes(), " != scores ",
              scores.sizes());
  TORCH_CHECK(!groups.is_floating_point(), "lambda_rank_loss: group ids must be integers");
  const int64_t B = scores.size(0);
  if (B == 0) return scores.sum();

  torch::Tensor weights;  // [B, B], constant
  torch::Tensor n_groups;
  {
    torch::NoGradGuard no_grad;
    const auto opts = scores.options().requires_grad(false);
    const torch::Tensor s = scores.detach();
    const torch::Tensor y = labels.to(opts.dtype());
    const torch::Tensor same = groups.unsqueeze(1) == groups.unsqueeze(0);  // [B, B]
    const torch::Tensor index = torch::arange(B, groups.options().dtype(torch::kLong));
    const torch::Tensor before = index.unsqueeze(0) < index.unsqueeze(1);  // [i, j]: j < i

    // 1-based rank of i in its group: 1 + #{j in group ranked ahead of i}.
    const auto rank_by = [&](const torch::Tensor& key) {
      const torch::Tensor ahead = (key.unsqueeze(0) > key.unsqueeze(1)) |
                                  ((key.unsqueeze(0) == key.unsqueeze(1)) & before);  // [i, j]: j ahead of i
      return (ahead & same).sum(1).to(opts.dtype()) + 1.0;
    };
    const auto discount = [&](const torch::Tensor& rank) {
      torch::Tensor d = 1.0 / torch::log2(rank + 1.0);
      if (options.ndcg_at > 0) d = d * (rank <= double(options.ndcg_at)).to(opts.dtype());
      return d;
    };
    const torch::Tensor gain = options.gain_power == 1.0 ? y : y.pow(options.gain_power);
    const torch::Tensor disc_now = discount(rank_by(s));
    const torch::Tensor disc_ideal = discount(rank_by(y));
    // IDCG of i's group, per program: Σ_{j in group} g_j · disc_ideal_j.
    const torch::Tensor idcg = torch::matmul(same.to(opts.dtype()), gain * disc_ideal).clamp_min(1e-12);

    const torch::Tensor delta_ndcg = (gain.unsqueeze(1) - gain.unsqueeze(0)).abs() *
                                     (disc_now.unsqueeze(1) - disc_now.unsqueeze(0)).abs() / idcg.unsqueeze(1);
    const torch::Tensor ordered = same & (y.unsqueeze(1) > y.unsqueeze(0));  // i should beat j
    weights = delta_ndcg * ordered.to(opts.dtype());
    // Number of groups = Σ_i 1 / |group(i)|.
    n_groups = (1.0 / same.sum(1).to(opts.dtype())).sum().round();
  }
  const torch::Tensor diff = scores.unsqueeze(1) - scores.unsqueeze(0);  // s_i - s_j
  const torch::Tensor pair_loss = torch::softplus(-options.sigma * diff);
  return (weights * pair_loss).sum() / n_groups;
}

}  // namespace tcl::trainer
