// trainer/train_loop.h — the smallest training loop: N optimizer steps of
// the LambdaRank loss on batches of whole groups drawn from in-memory
// tensors. Jobs (data from the registry, distillation, evaluation) build on it.
//
// Each step draws groups_per_batch distinct groups at random (a seeded
// generator, so a run is reproducible for a fixed thread count), scores all
// their programs in training mode, and takes one optimizer step, clipping
// the gradient norm first when grad_clip_norm > 0.
//
// Thread-safety: needs exclusive use of the model and the optimizer.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "trainer/lambda_rank.h"
#include "trainer/score_model.h"

namespace tcl::trainer {

// Programs with labels, made of whole groups. n = number of programs. All on
// the model's device (the group ids may be anywhere: they are read once).
struct RankingData {
  torch::Tensor tokens;       // [n, L, token_dim] float32
  torch::Tensor lengths;      // [n] int64
  torch::Tensor descriptors;  // [n, descriptor_dim] float32
  torch::Tensor labels;       // [n] float32 in (0, 1]
  torch::Tensor groups;       // [n] int64 group ids
};

struct TrainOptions {
  int64_t steps = 100;
  int64_t groups_per_batch = 4;  // clamped to the number of groups
  double grad_clip_norm = 1.0;   // 0 = no clipping
  uint64_t seed = 0;             // batch sampling
  LambdaRankOptions loss;
};

struct TrainStats {
  std::vector<double> step_losses;  // the batch loss before each step
};

// Trains `model` in place (leaves it in eval mode). `optimizer` must hold the
// model's parameters (make_adamw). Throws c10::Error on malformed data.
TrainStats train_ranking(ScoreModel& model, torch::optim::Optimizer& optimizer,
                         const RankingData& data, const TrainOptions& options);

// The loss over all of `data` in eval mode, without gradients.
double ranking_loss(ScoreModel& model, const RankingData& data,
                    const LambdaRankOptions& options = {});

}  // namespace tcl::trainer
