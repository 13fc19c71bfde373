// trainer/layers.h — the small layers every score model shares: Dense,
// RMSNorm, masked mean pooling, dropout with an explicit generator, and the
// FiLM-conditioned score head.
//
// Every layer initialises its weights from an explicit at::Generator in
// reset_parameters(), never from torch's global generator, so a model built
// from a seed is the same model on every run.
//
// Thread-safety: forward() without grad may run concurrently; training and
// reset_parameters() need exclusive access.
#pragma once

#include <torch/torch.h>

namespace tcl::trainer {

// y = x Wᵀ (+ b). W [out, in]; b [out] when `bias`.
// Init: U(-1/√in, 1/√in) for W and b (torch's nn.Linear default).
// With a low-rank delta (add_low_rank, trainer/adapter.h) it computes
// x (W + B·A)ᵀ (+ b); fold_adapter folds B·A into W.
class DenseImpl : public torch::nn::Module {
 public:
  DenseImpl(int64_t in_features, int64_t out_features, bool bias = true);
  void reset_parameters(at::Generator& gen);
  torch::Tensor forward(const torch::Tensor& x);

  // Registers lora_a [rank, in], U(-1/√in, 1/√in) from `gen`, and lora_b
  // [out, rank] = 0, on W's device: the layer computes what it did until
  // they train. Once per layer (c10::Error on a second call).
  void add_low_rank(int64_t rank, at::Generator& gen);

  torch::Tensor weight;
  torch::Tensor bias;    // undefined when built without bias
  torch::Tensor lora_a;  // undefined without a low-rank delta
  torch::Tensor lora_b;
};
TORCH_MODULE(Dense);

// RMSNorm over the last dim: y = x / sqrt(mean(x²) + eps) ⊙ weight. weight = 1.
class RMSNormImpl : public torch::nn::Module {
 public:
  explicit RMSNormImpl(int64_t dim, double eps = 1e-5);
  void reset_parameters();
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

// [B, L] bool, true where position < lengths[b]. lengths: [B] integer.
torch::Tensor length_mask(const torch::Tensor& lengths, int64_t max_len);

// Mean of h [B, L, E] over the first lengths[b] positions → [B, E].
// A length of 0 gives a zero vector.
torch::Tensor masked_mean(const torch::Tensor& h, const torch::Tensor& lengths);

// Inverted dropout drawing its mask from `gen` (a CPU generator) on the CPU,
// then copying it to x's device: one seed drops the same units on every
// device. Identity when !active or p == 0.
torch::Tensor dropout_with(const torch::Tensor& x, double p, bool active, at::Generator& gen);

// FiLM conditioning and the score MLP, shared by all model kinds:
//   (γ, β) = film_out(SiLU(film_in(descriptor)))       γ, β: [B, d_model]
//   e      = pooled ⊙ (1 + γ) + β                     (condition)
//   score  = head_out(drop(SiLU(head_in(drop(e)))))   (score) → [B]
// film_out starts near zero (weights ×0.01, bias 0): a fresh model starts
// almost unconditioned.
class ConditionedHeadImpl : public torch::nn::Module {
 public:
  ConditionedHeadImpl(int64_t d_model, int64_t descriptor_dim, int64_t film_hidden, int64_t head_hidden,
                      double dropout);
  void reset_parameters(at::Generator& gen);
  torch::Tensor condition(const torch::Tensor& pooled, const torch::Tensor& descriptor);
  torch::Tensor score(const torch::Tensor& conditioned, bool dropout_active, at::Generator& gen);

 private:
  Dense film_in_{nullptr}, film_out_{nullptr}, head_in_{nullptr}, head_out_{nullptr};
  int64_t d_model_;
  double dropout_;
};
TORCH_MODULE(ConditionedHead);

}  // namespace tcl::trainer
