// trainer/epoch_loop.h — the epochs of a training job (internal to
// trainer/: torch): batches from every source, the learning-rate schedule,
// AdamW steps, the budget and cancel checks, per-epoch validation with early
// stopping, the progress callback.
//
// An epoch takes epoch_batches (batches.h) of every source in order, cut to
// the source's max_batches, and shuffles them together when there are
// several sources; every draw comes from one SplitMix64 seeded by
// Optimisation::seed, so a request and seed give the same steps. Each step:
// the learning rate (linear warm-up, then cosine decay to 5% of the peak;
// t = steps done / planned, or the clock's share of the budget less one
// step's when that is further along), batch_loss (objective.h), backward,
// gradient clipping, AdamW step. The epoch loss is the mean over its steps,
// read once per epoch (a read per step would stall a GPU's queue).
//
// Thread-safety: needs exclusive use of the model.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "trainer/objective.h"
#include "trainer/train_job.h"

namespace tcl::trainer {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0);

struct EpochPlan {
  int epochs = 1;                // planned (the schedule spans them all)
  std::int64_t total_steps = 1;  // planned steps: steps per epoch × epochs
  Clock::time_point start = {};  // of the whole call (the time budget counts from it)
};

// What the loop scores: the validation split (early stopping; count 0 =
// none) and the eval split (the progress callback's val_top1), under the
// primary platform's descriptor.
struct LoopSplits {
  const SplitTensors* validation = nullptr;
  const SplitTensors* eval = nullptr;
  torch::Tensor descriptor = {};
};

// Trains `model` in place and leaves it in eval mode, holding the best
// epoch's weights when there is a validation split. Fills out's steps,
// epoch_losses, epochs_done, budget_exhausted, epoch_validation,
// best_epoch, validation and train_s. kCancelled: the callback returned
// false or *cancel became true.
Status run_epochs(ScoreModel& model, const std::vector<BatchSource>& sources, const DistillTerms* distill,
                  const LoopSplits& splits, const Optimisation& opt, const Resources& resources, const EpochPlan& plan,
                  const ProgressCallback& progress, TrainResult* out);

}  // namespace tcl::trainer
