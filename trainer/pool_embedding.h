// trainer/pool_embedding.h — what the RDU sampler needs from a model version
// (DESIGN §6): for every candidate program of a pool, its embedding (the
// student's pooled state conditioned on the platform) and its uncertainty.
//
// Uncertainty of a program, in the model's score units:
//   the standard deviation of `mc_samples` MC-dropout scores (the head's
//   dropout: StudentInference::head_mc, or CostModel::predict_mc for a
//   model without a fast path)
//   + when `others` holds descriptors of platforms the version already
//     knows: the standard deviation of its scores under this platform's and
//     those platforms' conditionings (how much they disagree: round 1, when
//     no label of the new platform exists)
//   + when a `reference` model is given (the active column's student): the
//     absolute difference of the two models' scores.
//
// Programs are queued with add() and computed in passes of kPass programs
// (tokens of one pass only are held). Results are appended in add order.
// Deterministic for a seed. Not thread-safe; torch-free header.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/features.h"
#include "core/record.h"
#include "core/status.h"
#include "trainer/cost_model.h"
#include "trainer/fast_inference.h"

namespace tcl::trainer {

// A model version as inference sees it: the facade, and the fast path for a
// Mamba student (may be null: the facade is used).
struct ServedModel {
  const CostModel* model = nullptr;
  const StudentInference* fast = nullptr;
};

struct PoolEmbeddingOptions {
  int32_t mc_samples = 8;  // >= 2
  uint64_t seed = 0;
};

class PoolEmbedder {
 public:
  static constexpr std::size_t kPass = 1024;

  // `descriptor`: this platform's (core::kHardwareDim floats); `others`: of
  // the platforms the version covers besides it. `reference` may be empty.
  PoolEmbedder(ServedModel model, std::span<const float> descriptor, std::vector<std::vector<float>> others,
               PoolEmbeddingOptions options, ServedModel reference = {});

  int64_t dim() const;  // embedding width (d_model)

  // Queues a program; runs a pass when kPass are queued. Programs queued
  // with uncertainty and without must be flushed apart (flush() between).
  Status add(std::span<const core::Step> steps, bool with_uncertainty);
  Status flush();

  // Row-major [count, dim()] and [count] (uncertainty only for the programs
  // queued with it, in order). predicted(): for the same programs as
  // uncertainty, the model's plain score (no dropout) under this platform's
  // descriptor (what the sampler's "fast" rule ranks by).
  const std::vector<float>& embeddings() const { return embeddings_; }
  const std::vector<float>& uncertainty() const { return uncertainty_; }
  const std::vector<float>& predicted() const { return predicted_; }
  // Moves the results out and starts empty (for a second set of programs).
  void take(std::vector<float>* embeddings, std::vector<float>* uncertainty, std::vector<float>* predicted = nullptr);

 private:
  Status score(const ServedModel& m, const FeatureBatch& batch, std::span<float> out) const;

  ServedModel model_, reference_;
  std::vector<float> descriptor_;
  std::vector<std::vector<float>> others_;
  PoolEmbeddingOptions options_;
  bool pending_uncertainty_ = false;
  uint64_t passes_ = 0;
  std::vector<std::vector<core::Step>> pending_;
  std::vector<float> tokens_, mc_, embeddings_, uncertainty_, predicted_;
  std::vector<int32_t> lengths_;
};

}  // namespace tcl::trainer
