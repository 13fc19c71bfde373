// trainer/model.h — the student of DESIGN §4: a small Mamba encoder.
//
//   tokens [B, L, token_dim]
//     → token_proj                                   [B, L, d_model]
//     → n_layers × MambaBlock (pre-norm residual)    [B, L, d_model]
//     → final RMSNorm → masked mean over lengths     [B, d_model]
//     → FiLM(descriptor) → MLP head                  [B]   (ScoreModel)
//
// The encoder is causal, so the rows past a sequence's length (padding) never
// change its score. With the defaults (d_model 64, 2 layers, d_state 16,
// expand 2, token_dim 32, descriptor_dim 16) the model has 81,217 parameters,
// 0.32 MB in fp32, whatever the number of platforms.
//
// Thread-safety: as ScoreModel.
#pragma once

#include <torch/torch.h>

#include "trainer/layers.h"
#include "trainer/model_config.h"
#include "trainer/score_model.h"

namespace tcl::trainer {

// x + out_proj(y ⊙ SiLU(z)), where, for h = RMSNorm(x):
//   (x', z) = split(in_proj(h))                     x', z: [B, L, d_inner]
//   x'      = SiLU(causal depthwise conv1d(x'))     kernel d_conv
//   (dt, B, C) = split(x_proj(x'))                  dt: [.., dt_rank]; B, C: [.., d_state]
//   delta   = softplus(dt_proj(dt))                 [B, L, d_inner]
//   y       = selective_scan(x', delta, -exp(A_log), B, C, D)
// Parameters named A_log [d_inner, d_state] and D [d_inner] are excluded from
// weight decay (trainer/optimizer.h).
class MambaBlockImpl : public torch::nn::Module {
 public:
  explicit MambaBlockImpl(const ModelConfig& config);
  // Mamba's initialisation: A_log = log(1..d_state) per channel, D = 1,
  // dt_proj bias = softplus⁻¹ of a log-uniform step in [1e-3, 1e-1].
  void reset_parameters(at::Generator& gen);
  torch::Tensor forward(const torch::Tensor& x);  // [B, L, d_model] → same

 private:
  int64_t d_inner_, d_state_, d_conv_, dt_rank_;
  RMSNorm norm_{nullptr};
  Dense in_proj_{nullptr}, x_proj_{nullptr}, dt_proj_{nullptr}, out_proj_{nullptr};
  torch::Tensor conv_weight_;  // [d_inner, 1, d_conv]
  torch::Tensor conv_bias_;    // [d_inner]
  torch::Tensor A_log_;        // [d_inner, d_state]
  torch::Tensor D_;            // [d_inner]
};
TORCH_MODULE(MambaBlock);

class MambaStudent : public ScoreModel {
 public:
  // config must validate (make_score_model checks it).
  explicit MambaStudent(const ModelConfig& config);

 protected:
  torch::Tensor encode(const torch::Tensor& tokens, const torch::Tensor& lengths) override;

 private:
  Dense token_proj_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};
  RMSNorm norm_f_{nullptr};
};

}  // namespace tcl::trainer
