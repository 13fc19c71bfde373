// trainer/mlp_model.cc
#include "trainer/mlp_model.h"

namespace tcl::trainer {

MlpModel::MlpModel(const ModelConfig& config) : ScoreModel(config) {
  layers_ = register_module("layers", torch::nn::ModuleList());
  layers_->push_back(Dense(config.token_dim, config.d_model));
  for (int64_t i = 1; i < config.n_layers; ++i) layers_->push_back(Dense(config.d_model, config.d_model));

  at::Generator gen = init_generator();
  for (const auto& layer : *layers_) layer->as<DenseImpl>()->reset_parameters(gen);
  reset_head(gen);
}

torch::Tensor MlpModel::encode(const torch::Tensor& tokens, const torch::Tensor& lengths) {
  torch::Tensor h = tokens;
  for (const auto& layer : *layers_) h = torch::relu(layer->as<DenseImpl>()->forward(h));
  return masked_mean(h, lengths);
}

}  // namespace tcl::trainer
