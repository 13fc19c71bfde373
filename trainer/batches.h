// trainer/batches.h — a split's tensors (and its scores) and the batches a training epoch
// takes from them (internal to trainer/: torch). One home for batch
// assembly: the training loop and the Fisher both take their batches here.
//
// One epoch visits every program of a split once: each group's (task's)
// rows are shuffled and cut into ceil(n / group_size) chunks of near-equal
// size; the chunks are shuffled, then (bucket_by_length) stably sorted by
// their longest sequence so that a batch holds chunks of similar length;
// groups_per_batch consecutive chunks make a batch, and the batches are
// shuffled. Every draw comes from the caller's SplitMix64, in that order, so
// a seed gives the same batches on every machine.
//
// Thread-safety: plain functions over values; a SplitTensors is read-only.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "core/random.h"
#include "trainer/dataset.h"
#include "trainer/evaluation.h"
#include "trainer/score_model.h"

namespace tcl::trainer {

// Batch order is drawn from core's SplitMix64 (one sequence on every machine).
using core::shuffle;
using core::SplitMix64;

// Tensors over a split's buffers, on `device`. On the CPU tokens is a view of
// the split's memory (from_blob, no copy): the split must outlive it; on a
// GPU the split is copied there once.
struct SplitTensors {
  std::int64_t count = 0;
  torch::Tensor tokens;   // [n, L, D] float
  torch::Tensor lengths;  // [n] int64
  torch::Tensor labels;   // [n] float
  const DatasetSplit* split = nullptr;
};

SplitTensors to_tensors(const DatasetSplit& s, const Dataset& ds, const torch::Device& device);

// The platform descriptor [1, D] on `device`.
torch::Tensor descriptor_tensor(const std::vector<float>& d, const torch::Device& device);

// Rows [first, first + n) trimmed to their longest sequence (at least 1).
std::pair<torch::Tensor, torch::Tensor> trimmed_rows(const SplitTensors& t, std::int64_t first, std::int64_t n);

// Scores of every program of a split, eval mode, no gradients; and their
// ranking metrics (all zero for an empty split). `scored`, when given, is
// told the programs scored so far after each chunk.
std::vector<float> score_split(ScoreModel& model, const SplitTensors& t, const torch::Tensor& descriptor,
                               const std::function<void(std::int64_t scored)>& scored = {});
RankingMetrics evaluate(ScoreModel& model, const SplitTensors& t, const torch::Tensor& descriptor);

// Each group's rows, groups in order of first appearance (contiguous in a
// split, but nothing relies on it).
using GroupRows = std::vector<std::vector<std::int64_t>>;
GroupRows group_rows(const DatasetSplit& s);

struct BatchShape {
  std::int64_t groups_per_batch = 8;  // chunks (LambdaRank groups) per batch
  std::int64_t group_size = 64;       // rows per chunk, at most
  bool bucket_by_length = true;
};

// A chunk: rows of one group. A batch: up to groups_per_batch chunks.
using Chunk = std::vector<std::int64_t>;
using ChunkBatch = std::vector<Chunk>;

// One epoch's batches (the order above), drawing from `rng`.
std::vector<ChunkBatch> epoch_batches(const GroupRows& groups, const DatasetSplit& split, const BatchShape& shape,
                                      SplitMix64& rng);

// How many batches epoch_batches makes of `groups`.
std::int64_t batches_per_epoch(const GroupRows& groups, const BatchShape& shape);

// A batch gathered from a split, on the split's device: the rows of chunk k
// are contiguous, in chunk order, and form LambdaRank group k; tokens are
// cut to the batch's longest sequence.
struct Batch {
  std::vector<std::int64_t> rows;         // split rows, in batch order
  std::vector<std::int64_t> chunk_sizes;  // rows of each chunk
  torch::Tensor tokens;                   // [b, longest, D]
  torch::Tensor lengths;                  // [b] int64
  torch::Tensor labels;                   // [b] float
  torch::Tensor groups;                   // [b] int64: the chunk of each row
  std::int64_t size() const { return static_cast<std::int64_t>(rows.size()); }
};

Batch gather_batch(const ChunkBatch& chunks, const SplitTensors& split);

// Per-row values of the split (e.g. distillation targets), in the batch's
// row order, on `device`.
torch::Tensor gather_rows(const std::vector<float>& per_row, const Batch& batch, const torch::Device& device);

}  // namespace tcl::trainer
