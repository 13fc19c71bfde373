// trainer/batches.cc — split tensors, epoch batches, batch gathering.
#include "trainer/batches.h"

#include <algorithm>
#include <iterator>

#include "trainer/device_internal.h"

namespace tcl::trainer {

SplitTensors to_tensors(const DatasetSplit& s, const Dataset& ds, const torch::Device& device) {
  SplitTensors t;
  t.count = s.count;
  t.split = &s;
  t.tokens = torch::from_blob(const_cast<float*>(s.tokens.data()), {s.count, ds.seq_len, ds.token_dim}, torch::kFloat)
                 .to(device);
  t.lengths =
      torch::from_blob(const_cast<std::int32_t*>(s.lengths.data()), {s.count}, torch::kInt).to(torch::kLong).to(device);
  t.labels = torch::from_blob(const_cast<float*>(s.labels.data()), {s.count}, torch::kFloat).to(device);
  return t;
}

torch::Tensor descriptor_tensor(const std::vector<float>& d, const torch::Device& device) {
  return torch::from_blob(const_cast<float*>(d.data()), {1, static_cast<std::int64_t>(d.size())}, torch::kFloat)
      .to(device);
}

std::pair<torch::Tensor, torch::Tensor> trimmed_rows(const SplitTensors& t, std::int64_t first, std::int64_t n) {
  std::int32_t longest = 1;
  for (std::int64_t i = first; i < first + n; ++i) {
    longest = std::max(longest, t.split->lengths[static_cast<std::size_t>(i)]);
  }
  return {t.tokens.narrow(0, first, n).narrow(1, 0, longest), t.lengths.narrow(0, first, n)};
}

std::vector<float> score_split(ScoreModel& model, const SplitTensors& t, const torch::Tensor& descriptor,
                               const std::function<void(std::int64_t scored)>& scored) {
  torch::NoGradGuard no_grad;
  model.eval();
  // Larger chunks on a GPU: fewer launches of the scan's per-step ops.
  const std::int64_t chunk = t.tokens.is_cpu() ? 256 : 1024;
  std::vector<float> scores(static_cast<std::size_t>(t.count));
  for (std::int64_t first = 0; first < t.count; first += chunk) {
    const std::int64_t n = std::min(chunk, t.count - first);
    auto [tokens, lengths] = trimmed_rows(t, first, n);
    const torch::Tensor s =
        model.forward(tokens, lengths, descriptor.expand({n, descriptor.size(1)})).to(torch::kCPU).contiguous();
    std::copy_n(s.data_ptr<float>(), n, scores.begin() + first);
    if (scored) scored(first + n);
  }
  return scores;
}

RankingMetrics evaluate(ScoreModel& model, const SplitTensors& t, const torch::Tensor& descriptor) {
  if (t.count == 0) return {};
  const std::vector<float> scores = score_split(model, t, descriptor);
  return evaluate_ranking(t.split->groups, t.split->latencies, scores);
}

GroupRows group_rows(const DatasetSplit& s) {
  GroupRows rows;
  std::vector<std::int64_t> slot;  // group id → index in rows, -1 = none yet
  for (std::int64_t i = 0; i < s.count; ++i) {
    const std::int64_t g = s.groups[static_cast<std::size_t>(i)];
    if (g >= static_cast<std::int64_t>(slot.size())) slot.resize(static_cast<std::size_t>(g) + 1, -1);
    if (slot[static_cast<std::size_t>(g)] < 0) {
      slot[static_cast<std::size_t>(g)] = static_cast<std::int64_t>(rows.size());
      rows.emplace_back();
    }
    rows[static_cast<std::size_t>(slot[static_cast<std::size_t>(g)])].push_back(i);
  }
  return rows;
}

namespace {

std::int64_t chunks_of(std::size_t rows, std::int64_t group_size) {
  return (static_cast<std::int64_t>(rows) + group_size - 1) / group_size;
}

// Every group's rows shuffled and cut into near-equal chunks; the chunks shuffled.
std::vector<Chunk> epoch_chunks(const GroupRows& groups, std::int64_t group_size, SplitMix64& rng) {
  std::vector<Chunk> chunks;
  for (const auto& g : groups) {
    std::vector<std::int64_t> rows = g;
    shuffle(rows, rng);
    const std::size_t n = rows.size();
    const auto k = static_cast<std::size_t>(chunks_of(n, group_size));
    for (std::size_t c = 0; c < k; ++c) {
      const std::size_t begin = c * n / k, end = (c + 1) * n / k;
      chunks.emplace_back(rows.begin() + static_cast<std::ptrdiff_t>(begin),
                          rows.begin() + static_cast<std::ptrdiff_t>(end));
    }
  }
  shuffle(chunks, rng);
  return chunks;
}

// Stable sort by each chunk's longest sequence (ties keep their shuffled order).
void bucket_by_length(const DatasetSplit& split, std::vector<Chunk>* chunks) {
  std::vector<std::pair<std::int32_t, std::size_t>> keys;  // (longest, position)
  keys.reserve(chunks->size());
  for (std::size_t c = 0; c < chunks->size(); ++c) {
    std::int32_t longest = 0;
    for (std::int64_t row : (*chunks)[c]) longest = std::max(longest, split.lengths[static_cast<std::size_t>(row)]);
    keys.emplace_back(longest, c);
  }
  std::sort(keys.begin(), keys.end());
  std::vector<Chunk> sorted;
  sorted.reserve(chunks->size());
  for (const auto& [longest, c] : keys) sorted.push_back(std::move((*chunks)[c]));
  *chunks = std::move(sorted);
}

}  // namespace

std::vector<ChunkBatch> epoch_batches(const GroupRows& groups, const DatasetSplit& split, const BatchShape& shape,
                                      SplitMix64& rng) {
  std::vector<Chunk> chunks = epoch_chunks(groups, shape.group_size, rng);
  if (shape.bucket_by_length) bucket_by_length(split, &chunks);
  std::vector<ChunkBatch> batches;
  const auto per_batch = static_cast<std::size_t>(shape.groups_per_batch);
  for (std::size_t c = 0; c < chunks.size(); c += per_batch) {
    batches.emplace_back(
        std::make_move_iterator(chunks.begin() + static_cast<std::ptrdiff_t>(c)),
        std::make_move_iterator(chunks.begin() + static_cast<std::ptrdiff_t>(std::min(chunks.size(), c + per_batch))));
  }
  shuffle(batches, rng);
  return batches;
}

std::int64_t batches_per_epoch(const GroupRows& groups, const BatchShape& shape) {
  std::int64_t k = 0;
  for (const auto& g : groups) k += chunks_of(g.size(), shape.group_size);
  return (k + shape.groups_per_batch - 1) / shape.groups_per_batch;
}

Batch gather_batch(const ChunkBatch& chunks, const SplitTensors& split) {
  Batch b;
  std::vector<std::int64_t> local_group;
  std::int32_t longest = 1;
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    b.chunk_sizes.push_back(static_cast<std::int64_t>(chunks[k].size()));
    for (std::int64_t row : chunks[k]) {
      b.rows.push_back(row);
      local_group.push_back(static_cast<std::int64_t>(k));
      longest = std::max(longest, split.split->lengths[static_cast<std::size_t>(row)]);
    }
  }
  const torch::Device device = split.tokens.device();
  const std::int64_t n = b.size();
  const torch::Tensor index = upload(torch::from_blob(b.rows.data(), {n}, torch::kLong), device);
  b.tokens = split.tokens.narrow(1, 0, longest).index_select(0, index);
  b.lengths = split.lengths.index_select(0, index);
  b.labels = split.labels.index_select(0, index);
  // A copy: on the CPU upload returns the host tensor itself, and local_group dies here.
  b.groups = upload(torch::from_blob(local_group.data(), {n}, torch::kLong).clone(), device);
  return b;
}

torch::Tensor gather_rows(const std::vector<float>& per_row, const Batch& batch, const torch::Device& device) {
  std::vector<float> values(batch.rows.size());
  for (std::size_t i = 0; i < batch.rows.size(); ++i) values[i] = per_row[static_cast<std::size_t>(batch.rows[i])];
  return upload(torch::from_blob(values.data(), {batch.size()}, torch::kFloat).clone(), device);
}

}  // namespace tcl::trainer
