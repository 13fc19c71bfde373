// trainer/layers.cc
#include "trainer/layers.h"

#include <cmath>

#include "trainer/device_internal.h"

namespace tcl::trainer {

DenseImpl::DenseImpl(int64_t in_features, int64_t out_features, bool with_bias) {
  weight = register_parameter("weight", torch::empty({out_features, in_features}));
  if (with_bias) bias = register_parameter("bias", torch::empty({out_features}));
}

void DenseImpl::reset_parameters(at::Generator& gen) {
  torch::NoGradGuard no_grad;
  const double bound = 1.0 / std::sqrt(static_cast<double>(weight.size(1)));
  weight.uniform_(-bound, bound, gen);
  if (bias.defined()) bias.uniform_(-bound, bound, gen);
}

torch::Tensor DenseImpl::forward(const torch::Tensor& x) {
  if (!lora_a.defined()) return torch::linear(x, weight, bias);
  // x Aᵀ Bᵀ, never B·A: rank-sized products, and W's gradient stays its own.
  return torch::linear(x, weight, bias) + torch::linear(torch::linear(x, lora_a), lora_b);
}

void DenseImpl::add_low_rank(int64_t rank, at::Generator& gen) {
  TORCH_CHECK(!lora_a.defined(), "Dense: a low-rank delta is already there");
  TORCH_CHECK(rank >= 1, "Dense: rank must be >= 1");
  const double bound = 1.0 / std::sqrt(static_cast<double>(weight.size(1)));
  torch::Tensor a = torch::empty({rank, weight.size(1)}, weight.options().device(torch::kCPU));
  {
    torch::NoGradGuard no_grad;
    a.uniform_(-bound, bound, gen);  // on the CPU: one seed, one init on every device
  }
  lora_a = register_parameter("lora_a", a.to(weight.device()));
  lora_b = register_parameter("lora_b", torch::zeros({weight.size(0), rank}, weight.options()));
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

void RMSNormImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  weight.fill_(1.0);
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps_) * weight;
}

torch::Tensor length_mask(const torch::Tensor& lengths, int64_t max_len) {
  const torch::Tensor positions = torch::arange(max_len, lengths.options().dtype(torch::kLong));
  return positions.unsqueeze(0) < lengths.to(torch::kLong).unsqueeze(1);
}

torch::Tensor masked_mean(const torch::Tensor& h, const torch::Tensor& lengths) {
  const torch::Tensor mask = length_mask(lengths, h.size(1)).to(h.scalar_type()).unsqueeze(-1);
  const torch::Tensor count = mask.sum(1).clamp_min(1.0);  // [B, 1]
  return (h * mask).sum(1) / count;
}

torch::Tensor dropout_with(const torch::Tensor& x, double p, bool active, at::Generator& gen) {
  if (!active || p <= 0.0) return x;
  // The mask is drawn on the CPU, whatever x's device: `gen` is a CPU
  // generator, and the CPU and CUDA runs of one seed drop the same units.
  torch::Tensor keep = torch::empty(x.sizes(), x.options().device(torch::kCPU).requires_grad(false));
  {
    torch::NoGradGuard no_grad;
    keep.bernoulli_(1.0 - p, gen);
  }
  return x * upload(keep, x.device()) / (1.0 - p);
}

ConditionedHeadImpl::ConditionedHeadImpl(int64_t d_model, int64_t descriptor_dim, int64_t film_hidden,
                                         int64_t head_hidden, double dropout)
    : d_model_(d_model), dropout_(dropout) {
  film_in_ = register_module("film_in", Dense(descriptor_dim, film_hidden));
  film_out_ = register_module("film_out", Dense(film_hidden, 2 * d_model));
  head_in_ = register_module("head_in", Dense(d_model, head_hidden));
  head_out_ = register_module("head_out", Dense(head_hidden, 1));
}

void ConditionedHeadImpl::reset_parameters(at::Generator& gen) {
  film_in_->reset_parameters(gen);
  film_out_->reset_parameters(gen);
  head_in_->reset_parameters(gen);
  head_out_->reset_parameters(gen);
  // Near-identity start: γ, β ≈ 0 but non-zero, so gradients reach film_in
  // from the first step.
  torch::NoGradGuard no_grad;
  film_out_->weight.mul_(0.01);
  film_out_->bias.zero_();
}

torch::Tensor ConditionedHeadImpl::condition(const torch::Tensor& pooled, const torch::Tensor& descriptor) {
  const torch::Tensor film = film_out_(torch::silu(film_in_(descriptor)));  // [B, 2·d_model]
  const torch::Tensor gamma = film.narrow(-1, 0, d_model_);
  const torch::Tensor beta = film.narrow(-1, d_model_, d_model_);
  return pooled * (1.0 + gamma) + beta;
}

torch::Tensor ConditionedHeadImpl::score(const torch::Tensor& conditioned, bool dropout_active, at::Generator& gen) {
  torch::Tensor x = dropout_with(conditioned, dropout_, dropout_active, gen);
  x = torch::silu(head_in_(x));
  x = dropout_with(x, dropout_, dropout_active, gen);
  return head_out_(x).squeeze(-1);
}

}  // namespace tcl::trainer
