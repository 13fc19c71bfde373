// trainer/model_config.h — what a score model looks like: its architecture
// kind and sizes. Torch-free, so api/ and daemon/ can hold, validate and store
// configs; the checkpoint (trainer/score_model.h) embeds the config text.
//
// Thread-safety: plain values; pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tcl::trainer {

// Written into checkpoints by name (model_kind_name); names never change.
enum class ModelKind {
  kMamba,      // the student of DESIGN §4
  kAttention,  // TLP-style baseline: self-attention encoder
  kMlp,        // TenSet-style baseline: per-token MLP, pooled
};

// "mamba", "attention", "mlp".
std::string_view model_kind_name(ModelKind kind);
std::optional<ModelKind> parse_model_kind(std::string_view name);

// Every architecture reads the fields it needs and ignores the rest. All
// architectures share: token projection → encoder → masked mean pooling →
// FiLM on the hardware descriptor → MLP head → one score per program.
// Defaults give the student of DESIGN §4 (81,217 parameters, 0.32 MB fp32 for
// token_dim 32, descriptor_dim 16).
struct ModelConfig {
  ModelKind kind = ModelKind::kMamba;

  // Input shapes, set from core's feature encoding (core/features.h).
  int64_t token_dim = 32;       // floats per token (step)
  int64_t descriptor_dim = 16;  // floats per hardware descriptor
  int64_t max_len = 72;         // longest token sequence accepted (GPU records reach ~70)

  // Encoder width and depth (all kinds).
  int64_t d_model = 64;
  int64_t n_layers = 2;

  // Mamba only.
  int64_t d_state = 16;  // N: state size per channel of the selective scan
  int64_t expand = 2;    // inner width = expand * d_model
  int64_t d_conv = 4;    // causal depthwise conv kernel width
  int64_t dt_rank = 0;   // rank of the Δ projection; 0 = ceil(d_model / 16)

  // Attention only.
  int64_t n_heads = 4;  // must divide d_model
  int64_t ff_mult = 2;  // feed-forward width = ff_mult * d_model

  // Conditioning and head (all kinds).
  int64_t film_hidden = 64;  // hidden width of the descriptor → (γ, β) MLP
  int64_t head_hidden = 64;  // hidden width of the score MLP
  double dropout = 0.1;      // head dropout; also the MC-dropout rate for uncertainty

  // Seeds the weight initialisation and the dropout generator: the same seed
  // and thread count give the same weights and the same training run.
  uint64_t seed = 0;
};

// kInvalidArgument naming the first bad field; OK otherwise.
Status validate(const ModelConfig& config);

// dt_rank with 0 resolved to ceil(d_model / 16).
int64_t resolved_dt_rank(const ModelConfig& config);

// "key=value" lines, one per field, in declaration order ("kind=mamba\n...").
// Stored in checkpoints. Parsing rejects unknown keys and bad values
// (kInvalidArgument naming the line); missing keys keep their defaults, so
// configs written before a field existed still load.
std::string config_to_text(const ModelConfig& config);
Result<ModelConfig> config_from_text(std::string_view text);

// Whether models of these configs have weights that line up parameter by
// parameter: equal configs, the init seed aside (it does not shape them).
bool same_layout(ModelConfig a, ModelConfig b);

// A per-platform adapter's shape (trainer/adapter.h): a rank-`rank` delta
// W + B·A on the chosen Dense layers of a trained model. Not part of
// ModelConfig: it is folded into the weights before a checkpoint is written.
enum class AdapterLayers {
  kBlocks,  // every Mamba block's in_proj and out_proj (the trunk's widest maps)
  kAll,     // every Dense layer: token_proj, the blocks' four, FiLM and the head
};
// "blocks", "all".
std::string_view adapter_layers_name(AdapterLayers layers);
std::optional<AdapterLayers> parse_adapter_layers(std::string_view name);

inline constexpr int kMaxAdapterRank = 64;
struct AdapterOptions {
  int rank = 0;  // 0 = none; at most kMaxAdapterRank
  AdapterLayers layers = AdapterLayers::kBlocks;
};

}  // namespace tcl::trainer
