// trainer/mlp_model.h — TenSet-style MLP baseline (DESIGN §4): every token
// goes through the same MLP (token_dim → d_model, then n_layers-1 more
// d_model → d_model layers, ReLU), the token vectors are averaged over the
// sequence (masked), and the shared FiLM + head scores the program. Order
// of the steps is ignored, as in TenSet's MLP.
//
// Thread-safety: as ScoreModel.
#pragma once

#include <torch/torch.h>

#include "trainer/layers.h"
#include "trainer/model_config.h"
#include "trainer/score_model.h"

namespace tcl::trainer {

class MlpModel : public ScoreModel {
 public:
  explicit MlpModel(const ModelConfig& config);

 protected:
  torch::Tensor encode(const torch::Tensor& tokens, const torch::Tensor& lengths) override;

 private:
  torch::nn::ModuleList layers_{nullptr};  // of Dense
};

}  // namespace tcl::trainer
