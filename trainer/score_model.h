// trainer/score_model.h — the common interface of every cost model in TCL
// (the Mamba student and the baselines), and its checkpoint format.
//
// A ScoreModel maps featurized programs to one score each (higher = faster):
//   tokens     [B, L, token_dim]   float32, rows past lengths[b] are padding
//   lengths    [B]                 integer, each in [0, L], L ≤ max_len
//   descriptor [B, descriptor_dim] float32, the platform's hardware descriptor
// Data flow: encode(tokens, lengths) → pooled [B, d_model]
//            → FiLM(descriptor) → embed [B, d_model] → MLP head → score [B].
// A kind only supplies encode(); conditioning and head are shared
// (trainer/layers.h), so all kinds are compared on the same footing.
//
// Bad input shapes throw c10::Error (trainer's torch-level API; the torch-free
// facade trainer/cost_model.h turns them into Status). Inputs live on the
// model's device; lengths are range-checked on the CPU only (the check reads
// them back, which would stall a GPU at every forward).
//
// Thread-safety: forward/embed/score_embedding/forward_mc under torch::NoGradGuard in eval
// mode may run concurrently (forward_mc's generator is internally locked);
// training (train(), backward, optimizer steps, load) needs exclusive access.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <torch/torch.h>

#include "core/status.h"
#include "trainer/layers.h"
#include "trainer/model_config.h"

namespace tcl::trainer {

class ScoreModel : public torch::nn::Module {
 public:
  // Scores [B]. Head dropout is on iff the module is in training mode.
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& lengths, const torch::Tensor& descriptor);
  // One MC-dropout sample of the scores [B]: head dropout on in any mode.
  torch::Tensor forward_mc(const torch::Tensor& tokens, const torch::Tensor& lengths, const torch::Tensor& descriptor);
  // The pooled hidden state after FiLM conditioning [B, d_model] (the
  // sampler's embedding of a program on a platform). No dropout.
  torch::Tensor embed(const torch::Tensor& tokens, const torch::Tensor& lengths, const torch::Tensor& descriptor);
  // embed() under each of `descriptors` ([B, descriptor_dim] each), the
  // programs encoded once: the encoder does not read the descriptor.
  std::vector<torch::Tensor> embed_each(const torch::Tensor& tokens, const torch::Tensor& lengths,
                                        const std::vector<torch::Tensor>& descriptors);
  // The scores [B] of embed()'s output: forward(x) is score_embedding(embed(x)),
  // for a caller that needs both (a distillation's feature term).
  torch::Tensor score_embedding(const torch::Tensor& embedding);

  const ModelConfig& config() const { return config_; }
  int64_t num_parameters() const;

 protected:
  // Builds the shared conditioning and head; seeds the dropout generator.
  explicit ScoreModel(const ModelConfig& config);
  // Kind-specific encoder: tokens [B, L, token_dim] → pooled [B, d_model].
  // Inputs are already checked.
  virtual torch::Tensor encode(const torch::Tensor& tokens, const torch::Tensor& lengths) = 0;
  // Initialises the head from `gen`; kinds call it after their own layers.
  void reset_head(at::Generator& gen);
  // The generator kinds draw their initial weights from (seeded by config.seed).
  at::Generator init_generator() const;

 private:
  void check_inputs(const torch::Tensor& tokens, const torch::Tensor& lengths, const torch::Tensor& descriptor) const;
  torch::Tensor scores(const torch::Tensor& tokens, const torch::Tensor& lengths, const torch::Tensor& descriptor,
                       bool dropout_active);

  const ModelConfig config_;  // constant after construction
  ConditionedHead head_{nullptr};
  at::Generator dropout_gen_;  // internally locked by ATen
};

// Builds a freshly initialised model of config.kind; kInvalidArgument when the
// config does not validate. The model starts on the CPU, in eval mode
// (module.to(device) moves it; the init is the same on every device).
Result<std::shared_ptr<ScoreModel>> make_score_model(const ModelConfig& config);

// Per-platform adapters kept in a checkpoint beside the trunk (trainer/
// adapter.h): platform name → adapter bytes (save_adapter).
using CheckpointAdapters = std::map<std::string, std::string, std::less<>>;
// Per-platform pinned models kept in a checkpoint beside the trunk (a
// best-of distill, onboarding/best_of.h): platform name → a plain (format 1)
// checkpoint that is that platform's whole model.
using CheckpointPinned = std::map<std::string, std::string, std::less<>>;

// Checkpoint: a torch archive holding {format = 1, config = config_to_text(),
// model = the module's parameters}; with adapters, format 2 and also
// {adapter_platforms = the names, adapter_<i> = the i-th one's bytes as a
// uint8 tensor}, so that a reader of format 1 only refuses it rather than
// scoring an adapted platform with the trunk; with pinned models, format 3
// and also {pinned_platforms = the names, pinned_<i> = the i-th one's plain
// checkpoint as a uint8 tensor} (adapters as in format 2, the list maybe
// empty), so that a reader of formats 1–2 refuses it. The bytes go to a bytea
// column as is. The model must be on the CPU and hold no unfolded adapter
// (c10::Error otherwise), so that every checkpoint loads on a machine
// without a GPU and scores as the model did. Never fails for a CPU
// model built by make_score_model (throws c10::Error on I/O failure of the
// in-memory stream only).
std::string save_score_model(const ScoreModel& model, const CheckpointAdapters& adapters = {},
                             const CheckpointPinned& pinned = {});

// Weight-space mix, in place: every floating parameter and buffer of `into`
// becomes (1 - share) · its own + share · `from`'s (moved to into's
// device). The two must be of one layout (the caller checks the configs);
// kInvalidArgument when their tensors differ in count or shape, and then
// nothing is changed. interpolate_checkpoints and a distill's teacher_mix.
Status mix_weights(ScoreModel& into, const ScoreModel& from, double share);

// Rebuilds the model from the stored config, then loads the weights, checking
// every parameter's name and shape. kDataLoss when the bytes are not a TCL
// checkpoint or do not match their config; kInvalidArgument when the stored
// config does not validate, or the checkpoint keeps per-platform adapters
// or pinned models (a reader must then ask for a platform's model: CostModel::
// load_for_platform), so that no reader scores an adapted platform with the
// trunk by mistake. The model is returned in eval mode.
Result<std::shared_ptr<ScoreModel>> load_score_model(std::string_view bytes);
// load_score_model's model for any checkpoint: the trunk, its adapters not
// applied (attach_adapter and load_for_platform build on it).
Result<std::shared_ptr<ScoreModel>> load_trunk(std::string_view bytes);

// The adapters a checkpoint holds (empty for format 1). kDataLoss as
// load_score_model, or when the adapter entries are malformed.
Result<CheckpointAdapters> load_checkpoint_adapters(std::string_view bytes);
// The pinned models a checkpoint holds (empty for formats 1 and 2). kDataLoss
// as load_score_model, or when the pinned entries are malformed.
Result<CheckpointPinned> load_checkpoint_pinned(std::string_view bytes);

}  // namespace tcl::trainer
