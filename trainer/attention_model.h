// trainer/attention_model.h — TLP-style baseline (DESIGN §4): tokens →
// projection + learned positions → n_layers pre-norm transformer encoder
// layers (multi-head self-attention with a key padding mask, SiLU
// feed-forward) → LayerNorm → masked mean → the shared FiLM + head.
//
// Sequences must not exceed config.max_len (the position table's size).
// No dropout inside the encoder: only the shared head drops, so MC dropout
// means the same thing for every kind.
//
// Thread-safety: as ScoreModel.
#pragma once

#include <torch/torch.h>

#include "trainer/layers.h"
#include "trainer/model_config.h"
#include "trainer/score_model.h"

namespace tcl::trainer {

class AttentionLayerImpl : public torch::nn::Module {
 public:
  AttentionLayerImpl(int64_t d_model, int64_t n_heads, int64_t ff_mult);
  void reset_parameters(at::Generator& gen);
  // x [B, L, d_model]; key_mask [B, L] bool, true for real tokens.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& key_mask);

 private:
  int64_t d_model_, n_heads_;
  torch::nn::LayerNorm norm_attn_{nullptr}, norm_ff_{nullptr};
  Dense qkv_{nullptr}, attn_out_{nullptr}, ff_in_{nullptr}, ff_out_{nullptr};
};
TORCH_MODULE(AttentionLayer);

class AttentionModel : public ScoreModel {
 public:
  explicit AttentionModel(const ModelConfig& config);

 protected:
  torch::Tensor encode(const torch::Tensor& tokens, const torch::Tensor& lengths) override;

 private:
  Dense token_proj_{nullptr};
  torch::Tensor pos_emb;  // [max_len, d_model], excluded from weight decay
  torch::nn::ModuleList layers_{nullptr};
  torch::nn::LayerNorm norm_f_{nullptr};
};

}  // namespace tcl::trainer
