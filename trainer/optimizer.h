// trainer/optimizer.h — AdamW with the parameters that must not shrink
// excluded from weight decay.
//
// Decay rule: a parameter decays iff it is a matrix or larger (dim ≥ 2) and
// its own name (the last dotted component) is not in kNoDecayNames. So
// biases, norm weights and D (all 1-D) never decay, and neither do A_log
// (Mamba's state matrix, whose decay would pull every A towards -1) and the
// attention baseline's position table.
//
// Thread-safety: pure functions; the optimizer returned is single-threaded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace tcl::trainer {

// Matrix-shaped parameters exempt from weight decay, by own name.
inline constexpr const char* kNoDecayNames[] = {"A_log", "pos_emb"};

struct AdamWConfig {
  double lr = 1e-3;
  double weight_decay = 1e-2;  // applied to the decay group only
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

// The model's trainable parameters split by the decay rule, in
// named_parameters() order; names are the full dotted names.
struct DecaySplit {
  std::vector<std::string> decay_names, no_decay_names;
  std::vector<torch::Tensor> decay, no_decay;
};
DecaySplit split_weight_decay(const torch::nn::Module& model);

// AdamW over two groups: {decay, weight_decay = config.weight_decay} and
// {no_decay, weight_decay = 0}. The optimizer shares the model's tensors;
// the model must outlive it.
std::unique_ptr<torch::optim::AdamW> make_adamw(const torch::nn::Module& model, const AdamWConfig& config = {});

// Scales the gradients of `parameters` so that their joint 2-norm is at most
// max_norm: torch::nn::utils::clip_grad_norm_'s ops, without its final read
// of the norm (a device sync at every step on a GPU). Parameters without a
// gradient are skipped.
void clip_grad_norm(const std::vector<torch::Tensor>& parameters, double max_norm);

// An exponential moving average of parameters (Optimisation::ema_decay):
// after step t (1-based), avg = d_t · avg + (1 − d_t) · θ with
// d_t = min(decay, (1 + t) / (10 + t)), so the first steps of a short run
// are not averaged with the initial weights. swap() exchanges the average
// and the parameters' values in place (twice = no change): the epoch loop
// judges and keeps the average, and trains the parameters.
class WeightAverage {
 public:
  // The average starts at the parameters' values; decay in (0, 1).
  WeightAverage(const std::vector<torch::Tensor>& parameters, double decay);
  void update();  // after an optimizer step
  void swap();
  std::int64_t steps() const { return steps_; }

 private:
  std::vector<torch::Tensor> parameters_, average_;
  double decay_;
  std::int64_t steps_ = 0;
};

}  // namespace tcl::trainer
