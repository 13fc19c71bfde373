// trainer/adapter.h — a per-platform adapter (issue 19 item 4): a low-rank
// delta on chosen Dense layers of a trained Mamba model, every other weight
// frozen (LoRA):
//   W  →  W + B·A      A [rank, in] ~ U(±1/√in), B [out, rank] = 0
// A fine-tune through it (FineTune::adapter) learns a platform in
// adapter_parameters numbers and leaves every other parameter bit for bit as
// its init checkpoint had it, so the platforms that checkpoint serves lose
// nothing. The trained delta is folded into the weights (fold_adapter) before
// the checkpoint is written: the result is a plain model of the same config,
// and the fast predict path and every reader take it as it is.
//
// Thread-safety: add_adapter changes the model (exclusive access);
// fold_adapter reads it (no training at the same time).
#pragma once

#include <cstdint>
#include <memory>

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
// adapted weight is W + B·A and every other tensor a copy: it scores what
// `model` scores. kInvalidArgument when `model` has no adapter.
Result<std::shared_ptr<ScoreModel>> fold_adapter(const ScoreModel& model);

}  // namespace tcl::trainer
