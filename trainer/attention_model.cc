// trainer/attention_model.cc
#include "trainer/attention_model.h"

#include <cmath>
#include <vector>

namespace tcl::trainer {

AttentionLayerImpl::AttentionLayerImpl(int64_t d_model, int64_t n_heads, int64_t ff_mult)
    : d_model_(d_model), n_heads_(n_heads) {
  const std::vector<int64_t> shape{d_model};
  norm_attn_ = register_module("norm_attn", torch::nn::LayerNorm(torch::nn::LayerNormOptions(shape)));
  qkv_ = register_module("qkv", Dense(d_model, 3 * d_model));
  attn_out_ = register_module("attn_out", Dense(d_model, d_model));
  norm_ff_ = register_module("norm_ff", torch::nn::LayerNorm(torch::nn::LayerNormOptions(shape)));
  ff_in_ = register_module("ff_in", Dense(d_model, ff_mult * d_model));
  ff_out_ = register_module("ff_out", Dense(ff_mult * d_model, d_model));
}

void AttentionLayerImpl::reset_parameters(at::Generator& gen) {
  norm_attn_->reset_parameters();  // deterministic: weight 1, bias 0
  norm_ff_->reset_parameters();
  qkv_->reset_parameters(gen);
  attn_out_->reset_parameters(gen);
  ff_in_->reset_parameters(gen);
  ff_out_->reset_parameters(gen);
}

torch::Tensor AttentionLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& key_mask) {
  const int64_t B = x.size(0), L = x.size(1), head_dim = d_model_ / n_heads_;
  torch::Tensor h;
  {
    // Self-attention: [B, L, 3, H, hd] → q, k, v [B, H, L, hd].
    const torch::Tensor qkv = qkv_(norm_attn_(x)).view({B, L, 3, n_heads_, head_dim}).permute({2, 0, 3, 1, 4});
    const torch::Tensor q = qkv[0], k = qkv[1], v = qkv[2];
    torch::Tensor att = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(head_dim));
    // Padding keys get a large negative logit (not -inf: an empty sequence
    // must not turn into NaN).
    att = att.masked_fill(key_mask.logical_not().view({B, 1, 1, L}), -1e9);
    att = torch::softmax(att, -1);
    const torch::Tensor ctx = torch::matmul(att, v).transpose(1, 2).reshape({B, L, d_model_});
    h = x + attn_out_(ctx);
  }
  return h + ff_out_(torch::silu(ff_in_(norm_ff_(h))));
}

AttentionModel::AttentionModel(const ModelConfig& config) : ScoreModel(config) {
  token_proj_ = register_module("token_proj", Dense(config.token_dim, config.d_model));
  pos_emb = register_parameter("pos_emb", torch::empty({config.max_len, config.d_model}));
  layers_ = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.n_layers; ++i) {
    layers_->push_back(AttentionLayer(config.d_model, config.n_heads, config.ff_mult));
  }
  norm_f_ = register_module("norm_f",
                            torch::nn::LayerNorm(torch::nn::LayerNormOptions(std::vector<int64_t>{config.d_model})));

  at::Generator gen = init_generator();
  token_proj_->reset_parameters(gen);
  {
    torch::NoGradGuard no_grad;
    pos_emb.normal_(0.0, 0.02, gen);
  }
  for (const auto& layer : *layers_) layer->as<AttentionLayerImpl>()->reset_parameters(gen);
  norm_f_->reset_parameters();
  reset_head(gen);
}

torch::Tensor AttentionModel::encode(const torch::Tensor& tokens, const torch::Tensor& lengths) {
  const int64_t L = tokens.size(1);
  const torch::Tensor key_mask = length_mask(lengths, L);
  torch::Tensor h = token_proj_(tokens) + pos_emb.narrow(0, 0, L).unsqueeze(0);
  for (const auto& layer : *layers_) h = layer->as<AttentionLayerImpl>()->forward(h, key_mask);
  return masked_mean(norm_f_(h), lengths);
}

}  // namespace tcl::trainer
