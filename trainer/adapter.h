// trainer/adapter.h — a per-platform adapter: a low-rank
// delta on chosen Dense layers of a trained Mamba model, every other weight
// frozen (LoRA):
//   W  →  W + B·A      A [rank, in] ~ U(±1/√in), B [out, rank] = 0
// A fine-tune through it (FineTune::adapter) learns a platform in
// adapter_parameters numbers and leaves every other parameter bit for bit as
// its init checkpoint had it. The trained delta is folded into the weights
// (fold_adapter) before the checkpoint is written: the result is a plain
// model of the same config, the new platform's model, which the fast predict
// path and every reader take as it is. Kept alone (save_adapter), it is the
// new platform's part of a version whose trunk still serves the old
// platforms unchanged (cost_model.h: attach_adapter, load_for_platform).
//
// Thread-safety: add_adapter changes the model (exclusive access);
// fold_adapter reads it (no training at the same time).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "trainer/model_config.h"
#include "trainer/score_model.h"

namespace tcl::trainer {

// AdapterOptions and AdapterLayers: trainer/model_config.h (torch-free, for
// FineTune::adapter).

// Adds the delta to `model`'s chosen layers (A drawn from `seed`, on the CPU,
// then moved to the model's device) and freezes every other parameter
// (requires_grad false). Returns the number of parameters added.
// kInvalidArgument: rank outside [1, kMaxAdapterRank], a model that is not a
// Mamba student, or one that has an adapter already.
Result<std::int64_t> add_adapter(ScoreModel& model, const AdapterOptions& options, std::uint64_t seed);

// Whether add_adapter has run on `model`.
bool has_adapter(const ScoreModel& model);

// A plain model of `model`'s config, on the CPU and in eval mode, whose every
// adapted weight is W + B·A (computed on the CPU, whatever the model's
// device) and every other tensor a copy: it scores what `model` scores.
// Deterministic: every fold of one adapter gives the same bits, on any
// machine (B·A as rank-1 products added in order, no BLAS reduction).
// kInvalidArgument when `model` has no adapter.
Result<std::shared_ptr<ScoreModel>> fold_adapter(const ScoreModel& model);

// The adapter alone, as bytes kept with a version (CheckpointAdapters):
// a torch archive {format = 1, config = the model's config text, trunk = a
// fingerprint of every other parameter's bytes, layers = the adapted
// modules' names, a_<i>, b_<i> = layer i's A and B}. kInvalidArgument when
// `model` has no adapter.
Result<std::string> save_adapter(const ScoreModel& model);

// `trunk` with the adapter of `bytes` folded in: a new plain model (CPU, eval
// mode), `trunk` unchanged. kDataLoss when the bytes are not an adapter or
// name layers this trunk does not have; kInvalidArgument when the adapter
// was trained on another trunk (another layout, or other weights: the
// fingerprint differs), or `trunk` has an unfolded adapter.
Result<std::shared_ptr<ScoreModel>> apply_adapter(const ScoreModel& trunk, std::string_view bytes);

}  // namespace tcl::trainer
