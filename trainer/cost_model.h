// trainer/cost_model.h — the torch-free face of a score model, for api/,
// daemon/ and sampler callers: plain float spans in and out, Status for every
// failure. Nothing outside trainer/ may include torch; this header does not.
//
// Inputs use core's feature layout (core/features.h): per program, seq_len
// tokens of token_dim floats (row-major, padded past its length) and one
// hardware descriptor of descriptor_dim floats.
//
// Thread-safety: predict, predict_mc, embed and save are const and may run
// concurrently (inference runs without autograd, in eval mode).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "trainer/model_config.h"

namespace tcl::trainer {

class ScoreModel;

// A borrowed batch of featurized programs; the spans must stay live for the call.
struct FeatureBatch {
  int64_t count = 0;                   // n programs
  int64_t seq_len = 0;                 // L tokens per program in `tokens`, 1 ≤ L ≤ config.max_len
  std::span<const float> tokens;       // n · L · token_dim
  std::span<const int32_t> lengths;    // n, each in [0, L]
  std::span<const float> descriptors;  // n · descriptor_dim, or descriptor_dim (one for all)
};

// Whether `batch` fits a model of `config`: the sizes above, every length in
// [0, seq_len]. kInvalidArgument naming the first mismatch ("batch: ...").
// The one check every inference path runs (CostModel, StudentInference).
Status check_batch(const FeatureBatch& batch, const ModelConfig& config);

class CostModel {
 public:
  // A freshly initialised model; kInvalidArgument when the config does not validate.
  static Result<std::unique_ptr<CostModel>> create(const ModelConfig& config);
  // A model from checkpoint bytes (save()); kDataLoss when they are not a
  // TCL checkpoint, kInvalidArgument when its config does not validate or
  // it keeps per-platform adapters (then load_for_platform).
  static Result<std::unique_ptr<CostModel>> load(std::string_view checkpoint);
  // Platform `platform`'s model: its pinned model (pin_platform), else the
  // trunk with that platform's adapter folded in (attach_adapter), else the
  // trunk ("" and every platform the checkpoint keeps nothing for: a
  // platform it has not learned is scored by the trunk). Errors as load(),
  // and kDataLoss for an adapter or pinned model that does not load.
  static Result<std::unique_ptr<CostModel>> load_for_platform(std::string_view checkpoint, std::string_view platform);
  ~CostModel();
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  const ModelConfig& config() const;
  int64_t num_parameters() const;

  // Checkpoint bytes (config + fp32 weights) for a bytea column.
  Result<std::string> save() const;

  // scores[i] = score of program i (higher = faster); scores.size() == n.
  // kInvalidArgument naming the mismatch when sizes disagree with the config.
  Status predict(const FeatureBatch& batch, std::span<float> scores) const;
  // `samples` MC-dropout samples, sample-major: scores[s · n + i];
  // scores.size() == samples · n.
  Status predict_mc(const FeatureBatch& batch, int32_t samples, std::span<float> scores) const;
  // The conditioned pooled state, row-major [n, d_model] (the sampler's embedding).
  Status embed(const FeatureBatch& batch, std::span<float> embeddings) const;

  // For trainer/ code only (training jobs): the underlying torch model.
  std::shared_ptr<ScoreModel> score_model() const;
  // Wraps a model built or trained by trainer/ code and puts it in eval mode.
  // The model must not be trained while wrapped.
  static std::unique_ptr<CostModel> wrap(std::shared_ptr<ScoreModel> model);

 private:
  struct Impl;
  explicit CostModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;  // constant after construction
};

// Weight-space interpolation of two checkpoints of one architecture (equal
// configs but for the seed): (1 − alpha) · a + alpha · b for every parameter and buffer, as
// checkpoint bytes with a's config. With a = the init and b = its fine-tune
// this is WiSE-FT (Wortsman et al., 2022): alpha = 1 is the fine-tune, 0 the
// init; between them the mix is often better than either on data unlike the
// fine-tune's. kInvalidArgument when the configs differ or alpha is not finite;
// kDataLoss when either is not a checkpoint.
Result<std::string> interpolate_checkpoints(std::string_view a, std::string_view b, double alpha);

// Per-platform adapters (trainer/adapter.h; docs/continual.md, "The
// per-platform adapter"). attach_adapter: `checkpoint` with `adapter` (a
// TrainResult::adapter trained on this trunk) kept for `platform`, replacing
// the adapter or pinned model it had; every other platform's entry and the
// trunk's weights stay as they were. kInvalidArgument for an empty platform
// or an adapter of another layout; kDataLoss when either does not load.
Result<std::string> attach_adapter(std::string_view checkpoint, std::string_view platform, std::string_view adapter);
// The platforms `checkpoint` keeps an adapter for, sorted. kDataLoss when it
// is not a checkpoint.
Result<std::vector<std::string>> adapter_platforms(std::string_view checkpoint);
// Per-platform pinned models (a best-of distill, onboarding/best_of.h):
// pin_platform: `checkpoint` with `model` (plain checkpoint bytes, e.g.
// platform_checkpoint of the parent version) kept as `platform`'s whole
// model, replacing the adapter or pinned model it had; every other entry
// and the trunk stay as they were. The result is a format-3 checkpoint.
// kInvalidArgument for an empty platform or a model that reads other token
// or descriptor widths than the trunk; kInvalidArgument/kDataLoss when
// `model` is not a plain checkpoint or `checkpoint` does not load.
Result<std::string> pin_platform(std::string_view checkpoint, std::string_view platform, std::string_view model);
// The platforms `checkpoint` keeps a pinned model for, sorted (kDataLoss when
// it is not a checkpoint); own_model_platforms: those with an adapter or a
// pinned model, sorted: every platform not among them is served by the trunk.
Result<std::vector<std::string>> pinned_platforms(std::string_view checkpoint);
Result<std::vector<std::string>> own_model_platforms(std::string_view checkpoint);
// Platform `platform`'s model as plain (format 1) checkpoint bytes: what
// load_for_platform gives, saved; the trunk alone for "" or a platform
// without an adapter or pinned model; a pinned model's bytes as they were
// pinned. A checkpoint without either comes back as it is, unread. For readers of checkpoint bytes that score one
// platform (a fine-tune's init, the promotion gate's paired scoring). Errors as load_for_platform.
Result<std::string> platform_checkpoint(std::string_view checkpoint, std::string_view platform);

}  // namespace tcl::trainer
