// trainer/train_job.cc — dataset → tensors (no copy of the token buffer),
// the epoch loop over chunks of whole groups, evaluation, checkpoint; every
// torch exception becomes a Status here.
#include "trainer/train_job.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>

#include "core/features.h"
#include "core/program_id.h"
#include "core/random.h"
#include "core/task_split.h"
#include "trainer/cost_model.h"
#include "trainer/device_internal.h"
#include "trainer/fast_inference.h"
#include "trainer/lambda_rank.h"
#include "trainer/optimizer.h"
#include "trainer/score_model.h"

namespace tcl::trainer {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The batch-order stream is seeded apart from init and dropout.
constexpr std::uint64_t kOrderSeedSalt = 0xD1B54A32D192ED03ULL;

using core::shuffle;
using core::SplitMix64;

// Sets torch's intra-op thread count for a scope.
class ThreadsScope {
 public:
  explicit ThreadsScope(int threads) {
    if (threads > 0) {
      previous_ = at::get_num_threads();
      at::set_num_threads(threads);
    }
  }
  ~ThreadsScope() {
    if (previous_ > 0) at::set_num_threads(previous_);
  }
  ThreadsScope(const ThreadsScope&) = delete;
  ThreadsScope& operator=(const ThreadsScope&) = delete;

 private:
  int previous_ = 0;
};

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

SplitTensors to_tensors(const DatasetSplit& s, const Dataset& ds, const torch::Device& device) {
  SplitTensors t;
  t.count = s.count;
  t.split = &s;
  t.tokens = torch::from_blob(const_cast<float*>(s.tokens.data()), {s.count, ds.seq_len, ds.token_dim},
                              torch::kFloat)
                 .to(device);
  t.lengths = torch::from_blob(const_cast<std::int32_t*>(s.lengths.data()), {s.count}, torch::kInt)
                  .to(torch::kLong)
                  .to(device);
  t.labels = torch::from_blob(const_cast<float*>(s.labels.data()), {s.count}, torch::kFloat).to(device);
  return t;
}

// The platform descriptor [1, D] on `device`.
torch::Tensor descriptor_tensor(const std::vector<float>& d, const torch::Device& device) {
  return torch::from_blob(const_cast<float*>(d.data()), {1, static_cast<std::int64_t>(d.size())}, torch::kFloat)
      .to(device);
}

// Rows [first, first + n) trimmed to their longest sequence (at least 1).
std::pair<torch::Tensor, torch::Tensor> trimmed_rows(const SplitTensors& t, std::int64_t first,
                                                     std::int64_t n) {
  std::int32_t longest = 1;
  for (std::int64_t i = first; i < first + n; ++i) {
    longest = std::max(longest, t.split->lengths[static_cast<std::size_t>(i)]);
  }
  return {t.tokens.narrow(0, first, n).narrow(1, 0, longest), t.lengths.narrow(0, first, n)};
}

// Scores of every program of the split, eval mode, no gradients.
std::vector<float> score_split(ScoreModel& model, const SplitTensors& t,
                               const torch::Tensor& descriptor) {
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
  }
  return scores;
}

RankingMetrics evaluate(ScoreModel& model, const SplitTensors& t, const torch::Tensor& descriptor) {
  if (t.count == 0) return {};
  const std::vector<float> scores = score_split(model, t, descriptor);
  return evaluate_ranking(t.split->groups, t.split->latencies, scores);
}

// A copy of the model's state (parameters, then buffers), for early stopping.
void copy_weights(ScoreModel& model, std::vector<torch::Tensor>* out) {
  torch::NoGradGuard no_grad;
  out->clear();
  for (const torch::Tensor& p : model.parameters()) out->push_back(p.detach().clone());
  for (const torch::Tensor& b : model.buffers()) out->push_back(b.detach().clone());
}

void restore_weights(const std::vector<torch::Tensor>& weights, ScoreModel* model) {
  torch::NoGradGuard no_grad;
  std::size_t i = 0;
  for (torch::Tensor& p : model->parameters()) p.copy_(weights[i++]);
  for (torch::Tensor& b : model->buffers()) b.copy_(weights[i++]);
}

// Each group's rows (contiguous in a split, but do not rely on it).
std::vector<std::vector<std::int64_t>> group_rows(const DatasetSplit& s) {
  std::vector<std::vector<std::int64_t>> rows;
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

std::vector<std::vector<std::int64_t>> epoch_chunks(const std::vector<std::vector<std::int64_t>>& groups,
                                                    std::int64_t group_size, SplitMix64& rng) {
  std::vector<std::vector<std::int64_t>> chunks;
  for (const auto& g : groups) {
    std::vector<std::int64_t> rows = g;
    shuffle(rows, rng);
    const std::size_t n = rows.size();
    const std::size_t k = (n + static_cast<std::size_t>(group_size) - 1) / static_cast<std::size_t>(group_size);
    for (std::size_t c = 0; c < k; ++c) {
      const std::size_t begin = c * n / k, end = (c + 1) * n / k;
      chunks.emplace_back(rows.begin() + static_cast<std::ptrdiff_t>(begin),
                          rows.begin() + static_cast<std::ptrdiff_t>(end));
    }
  }
  shuffle(chunks, rng);
  return chunks;
}

// One epoch's batches of chunks: every group's rows shuffled and cut into
// ceil(n / group_size) chunks of near-equal size; the chunks shuffled, then
// (bucketing) stably sorted by their longest sequence so that a batch holds
// chunks of similar length; groups_per_batch consecutive chunks make a batch,
// and the batches are shuffled.
using Chunk = std::vector<std::int64_t>;
std::vector<std::vector<Chunk>> epoch_batches(const std::vector<std::vector<std::int64_t>>& groups,
                                              const DatasetSplit& split, const TrainRequest& r,
                                              SplitMix64& rng) {
  std::vector<Chunk> chunks = epoch_chunks(groups, r.group_size, rng);
  if (r.bucket_by_length) {
    std::vector<std::pair<std::int32_t, std::size_t>> keys;  // (longest, position)
    keys.reserve(chunks.size());
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      std::int32_t longest = 0;
      for (std::int64_t row : chunks[c]) longest = std::max(longest, split.lengths[static_cast<std::size_t>(row)]);
      keys.emplace_back(longest, c);
    }
    std::sort(keys.begin(), keys.end());
    std::vector<Chunk> sorted;
    sorted.reserve(chunks.size());
    for (const auto& [longest, c] : keys) sorted.push_back(std::move(chunks[c]));
    chunks = std::move(sorted);
  }
  std::vector<std::vector<Chunk>> batches;
  const auto per_batch = static_cast<std::size_t>(r.groups_per_batch);
  for (std::size_t c = 0; c < chunks.size(); c += per_batch) {
    batches.emplace_back(std::make_move_iterator(chunks.begin() + static_cast<std::ptrdiff_t>(c)),
                         std::make_move_iterator(chunks.begin() +
                                                 static_cast<std::ptrdiff_t>(std::min(chunks.size(), c + per_batch))));
  }
  shuffle(batches, rng);
  return batches;
}

std::int64_t chunks_per_epoch(const std::vector<std::vector<std::int64_t>>& groups, std::int64_t group_size) {
  std::int64_t k = 0;
  for (const auto& g : groups) k += (static_cast<std::int64_t>(g.size()) + group_size - 1) / group_size;
  return k;
}

void set_lr(torch::optim::Optimizer& opt, double lr) {
  for (auto& group : opt.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
}

// Linear warm-up, then cosine decay from peak to 5% of it; t in [0, 1] is
// the share of the run done (steps, or the clock under a time budget).
double lr_at(const TrainRequest& r, double t, std::int64_t total_steps) {
  if (r.warmup_fraction > 0 && t < r.warmup_fraction) {
    const double first = 1.0 / static_cast<double>(std::max<std::int64_t>(total_steps, 1));
    return r.learning_rate * std::min(1.0, (t + first) / r.warmup_fraction);
  }
  const double w = r.warmup_fraction;
  const double u = std::clamp((t - w) / std::max(1e-12, 1.0 - w), 0.0, 1.0);
  constexpr double kFloor = 0.05;
  return r.learning_rate * (kFloor + (1.0 - kFloor) * 0.5 * (1.0 + std::cos(M_PI * u)));
}

// Scores of every program of a split by a frozen model under one
// descriptor (distillation targets): the fast path for a student.
Result<std::vector<float>> frozen_scores(const CostModel& model, const DatasetSplit& split, std::int64_t seq_len,
                                         std::span<const float> descriptor) {
  std::vector<float> out(static_cast<std::size_t>(split.count));
  if (split.count == 0) return out;
  const FeatureBatch batch{split.count, seq_len, split.tokens, split.lengths, descriptor};
  if (model.config().kind == ModelKind::kMamba) {
    auto fast = StudentInference::create(model, InferenceOptions{.threads = 0});
    if (!fast) return fast.status();
    if (Status s = (*fast)->predict(batch, out); !s) return s;
    return out;
  }
  if (Status s = model.predict(batch, out); !s) return s;
  return out;
}

// Ranking-aware distillation over the chunks of a batch (rows of chunk k
// are contiguous, in chunk order): mean over chunks of
// KL(softmax(target/τ) ‖ softmax(scores/τ)).
torch::Tensor listwise_kd(const torch::Tensor& scores, const torch::Tensor& target,
                          const std::vector<std::int64_t>& chunk_sizes, double temperature) {
  torch::Tensor total = torch::zeros({}, scores.options());
  std::int64_t offset = 0, used = 0;
  for (std::int64_t n : chunk_sizes) {
    if (n >= 2) {
      const torch::Tensor s = scores.narrow(0, offset, n) / temperature;
      const torch::Tensor t = target.narrow(0, offset, n) / temperature;
      const torch::Tensor p = torch::softmax(t, 0);
      total = total + (p * (torch::log_softmax(t, 0) - torch::log_softmax(s, 0))).sum();
      ++used;
    }
    offset += n;
  }
  return used > 0 ? total / static_cast<double>(used) : total;
}

// Fisher bytes <-> per-parameter tensors (the model's parameter order).
std::string fisher_bytes(const std::vector<torch::Tensor>& fisher) {
  std::string out;
  for (const torch::Tensor& f : fisher) {
    const torch::Tensor c = f.to(torch::kCPU, torch::kFloat).contiguous();
    out.append(reinterpret_cast<const char*>(c.data_ptr<float>()), static_cast<std::size_t>(c.numel()) * sizeof(float));
  }
  return out;
}

Result<std::vector<torch::Tensor>> fisher_tensors(std::string_view bytes, ScoreModel& model) {
  std::vector<torch::Tensor> out;
  std::size_t offset = 0;
  for (const torch::Tensor& p : model.parameters()) {
    const std::size_t n = static_cast<std::size_t>(p.numel()) * sizeof(float);
    if (offset + n > bytes.size()) break;
    torch::Tensor f = torch::empty(p.sizes(), torch::kFloat);
    std::memcpy(f.data_ptr<float>(), bytes.data() + offset, n);
    out.push_back(f.to(p.device()));
    offset += n;
  }
  if (offset != bytes.size() || out.size() != model.parameters().size()) {
    return Status::invalid_argument("train: teacher_fisher holds " + std::to_string(bytes.size()) +
                                    " bytes; the teacher has " + std::to_string(model.num_parameters()) +
                                    " parameters (" + std::to_string(4 * model.num_parameters()) + " bytes)");
  }
  return out;
}

Status check_request(const TrainRequest& r) {
  if (r.epochs < 1) return Status::invalid_argument("train: epochs must be >= 1");
  if (r.min_steps < 0 || r.min_steps > 1'000'000) return Status::invalid_argument("train: min_steps must be in [0, 1e6]");
  if (r.patience < 0) return Status::invalid_argument("train: patience must be >= 0");
  if (r.stop_after_epochs < 0) return Status::invalid_argument("train: stop_after_epochs must be >= 0");
  if (r.refit && r.dataset != nullptr) {
    return Status::invalid_argument("train: refit needs records, not a prebuilt dataset");
  }
  if (r.auto_schedule && !r.init_checkpoint.empty() && r.dataset != nullptr) {
    return Status::invalid_argument("train: auto_schedule needs records, not a prebuilt dataset");
  }
  if (!(r.long_schedule.validation_fraction >= 0 && r.long_schedule.validation_fraction < 1) ||
      r.long_schedule.min_steps < 0 || r.long_schedule.min_steps > 1'000'000 || r.long_schedule.patience < 0) {
    return Status::invalid_argument(
        "train: long_schedule needs validation_fraction in [0, 1), min_steps in [0, 1e6] and patience >= 0");
  }
  if (r.groups_per_batch < 1) return Status::invalid_argument("train: groups_per_batch must be >= 1");
  if (r.group_size < 2) return Status::invalid_argument("train: group_size must be >= 2");
  if (!(r.learning_rate > 0)) return Status::invalid_argument("train: learning_rate must be > 0");
  if (!(r.weight_decay >= 0)) return Status::invalid_argument("train: weight_decay must be >= 0");
  if (!(r.warmup_fraction >= 0 && r.warmup_fraction < 1)) {
    return Status::invalid_argument("train: warmup_fraction must be in [0, 1)");
  }
  if (!(r.grad_clip_norm >= 0)) return Status::invalid_argument("train: grad_clip_norm must be >= 0");
  if (!(r.lambda_sigma > 0)) return Status::invalid_argument("train: lambda_sigma must be > 0");
  if (r.ndcg_at < 0) return Status::invalid_argument("train: ndcg_at must be >= 0");
  if (r.threads < 0) return Status::invalid_argument("train: threads must be >= 0");
  if (!(r.time_budget_s >= 0)) return Status::invalid_argument("train: time_budget_s must be >= 0");
  return Status::ok();
}

// Whether a checkpoint of config `c` reads the data's tokens and descriptor.
Status init_fits(const ModelConfig& c, const Dataset& ds) {
  const auto descriptor_dim = static_cast<std::int64_t>(ds.descriptor.size());
  if (c.token_dim != ds.token_dim || c.descriptor_dim != descriptor_dim || ds.seq_len > c.max_len) {
    return Status::invalid_argument("init_checkpoint reads tokens of " + std::to_string(c.token_dim) +
                                    " floats, descriptors of " + std::to_string(c.descriptor_dim) + " and at most " +
                                    std::to_string(c.max_len) + " steps; the data has " + std::to_string(ds.token_dim) +
                                    ", " + std::to_string(descriptor_dim) + " and " + std::to_string(ds.seq_len));
  }
  return Status::ok();
}

Result<TrainResult> run(const TrainRequest& request, const ProgressCallback& progress,
                        Clock::time_point start) {
  TrainResult out;
  Result<Device> resolved = resolve_device(request.device);
  if (!resolved) return resolved.status().with_context("train");
  out.device = *resolved;
  const torch::Device dev = torch_device(*resolved);

  // Data.
  std::optional<Dataset> built;
  const Dataset* ds = request.dataset;
  if (ds == nullptr) {
    DatasetOptions options = request.data;
    options.max_len = static_cast<int>(std::min<std::int64_t>(options.max_len, request.model.max_len));
    Result<Dataset> made = build_dataset(request.records, request.platform, options);
    if (!made) return made.status().with_context("train");
    built = std::move(*made);
    ds = &*built;
    out.dataset_s = seconds_since(start);
  }
  out.data = ds->summary;
  out.encoding = ds->encoding;

  // Model.
  ModelConfig config = request.model;
  config.token_dim = ds->token_dim;
  config.descriptor_dim = static_cast<std::int64_t>(ds->descriptor.size());
  config.seed = request.seed;
  if (ds->encoding == TokenEncoding::kTlp) config.max_len = ds->seq_len;
  if (ds->seq_len > config.max_len) {
    return Status::invalid_argument("train: the data's sequence length " + std::to_string(ds->seq_len) +
                                    " exceeds the model's max_len " + std::to_string(config.max_len));
  }
  Result<std::shared_ptr<ScoreModel>> made = Status::internal("train: no model");
  if (request.init_checkpoint.empty()) {
    made = make_score_model(config);
  } else {
    auto init = CostModel::load(request.init_checkpoint);
    if (!init) return init.status().with_context("train: init_checkpoint");
    const ModelConfig& c = (*init)->config();
    if (Status s = init_fits(c, *ds); !s) return s.with_context("train");
    config = c;
    made = (*init)->score_model();
  }
  if (!made) return made.status().with_context("train");
  ScoreModel& model = **made;
  out.config = config;
  out.num_parameters = model.num_parameters();
  if (!dev.is_cpu()) model.to(dev);  // built (or loaded) on the CPU; back there before saving

  const SplitTensors train = to_tensors(ds->train, *ds, dev);
  const SplitTensors eval = to_tensors(ds->eval, *ds, dev);
  const SplitTensors validation = to_tensors(ds->validation, *ds, dev);
  const torch::Tensor descriptor = descriptor_tensor(ds->descriptor, dev);
  const std::vector<std::vector<std::int64_t>> groups = group_rows(ds->train);
  std::int64_t steps_per_epoch =
      (chunks_per_epoch(groups, request.group_size) + request.groups_per_batch - 1) / request.groups_per_batch;

  // Where batches come from: the primary platform, the joint platforms, and
  // for a distill the unmeasured pool (unlabeled: KD terms only).
  struct Source {
    const Dataset* ds;
    SplitTensors train;
    torch::Tensor descriptor;
    std::vector<std::vector<std::int64_t>> groups;
    bool labeled = true;
    std::int64_t max_batches = -1;  // per epoch; -1 = all
    // Distill targets per row: the active column's and the teacher's per old platform.
    std::vector<float> column_target = {};
    std::vector<std::vector<float>> old_targets = {};
  };
  std::vector<Dataset> joint_data;
  joint_data.reserve(request.joint.size());
  std::vector<Source> sources;
  sources.push_back(Source{.ds = ds, .train = train, .descriptor = descriptor, .groups = groups});
  if (!request.joint.empty()) {
    if (request.distill != nullptr || request.dataset != nullptr) {
      return Status::invalid_argument("train: joint training goes with neither distill nor a prebuilt dataset");
    }
    DatasetOptions options = request.data;
    options.max_len = static_cast<int>(std::min<std::int64_t>(options.max_len, config.max_len));
    options.validation_fraction = 0;  // validation is the primary platform's
    for (const auto& j : request.joint) {
      Result<Dataset> made_j = build_dataset(j.records, j.platform, options);
      if (!made_j) return made_j.status().with_context("train: joint platform " + j.platform.target);
      if (made_j->token_dim != ds->token_dim || made_j->seq_len > config.max_len) {
        return Status::invalid_argument("train: a joint platform's data does not fit the model");
      }
      joint_data.push_back(std::move(*made_j));
    }
    for (const Dataset& d : joint_data) {
      Source src{.ds = &d,
                 .train = to_tensors(d.train, d, dev),
                 .descriptor = descriptor_tensor(d.descriptor, dev),
                 .groups = group_rows(d.train)};
      steps_per_epoch +=
          (chunks_per_epoch(src.groups, request.group_size) + request.groups_per_batch - 1) / request.groups_per_batch;
      sources.push_back(std::move(src));
    }
  }
  // Distillation targets, computed once on this platform's programs.
  const DistillTargets* kd = request.distill;
  std::optional<Dataset> unlabeled;
  std::vector<torch::Tensor> old_descriptors, anchor, fisher;
  if (kd != nullptr) {
    if (request.init_checkpoint.empty()) return Status::invalid_argument("train: distill needs init_checkpoint (the teacher)");
    if (ds->encoding != TokenEncoding::kSteps) return Status::invalid_argument("train: distill needs the steps encoding");
    if (!(kd->unlabeled_ratio >= 0)) return Status::invalid_argument("train: unlabeled_ratio must be >= 0");
    if (kd->max_unlabeled < 0) return Status::invalid_argument("train: max_unlabeled must be >= 0");
    auto teacher = CostModel::load(request.init_checkpoint);
    if (!teacher) return teacher.status().with_context("train: teacher");
    std::unique_ptr<CostModel> column;
    if (!kd->column_checkpoint.empty()) {
      auto c = CostModel::load(kd->column_checkpoint);
      if (!c) return c.status().with_context("train: active column");
      column = std::move(*c);
    }
    for (const auto& h : kd->old_descriptors) {
      if (static_cast<std::int64_t>(h.size()) != config.descriptor_dim) {
        return Status::invalid_argument("train: an old platform's descriptor has " + std::to_string(h.size()) +
                                        " floats, the model reads " + std::to_string(config.descriptor_dim));
      }
      old_descriptors.push_back(descriptor_tensor(h, dev));
    }
    // KD-only batches need a KD term to learn from.
    const bool kd_term = (column && kd->column_weight > 0) || (!old_descriptors.empty() && kd->old_weight > 0);
    if (!kd->unlabeled.empty() && kd->unlabeled_ratio > 0 && kd->max_unlabeled > 0 && kd_term) {
      if (request.dataset != nullptr) {
        return Status::invalid_argument("train: unlabeled programs go with records, not a prebuilt dataset");
      }
      DatasetOptions options = request.data;  // its eval split stays out
      options.max_len = static_cast<int>(std::min<std::int64_t>(request.data.max_len, config.max_len));
      options.max_records = kd->max_unlabeled;
      options.sample_seed = request.seed;
      // Whole validation tasks stay out too: no gradient from the tasks that judge the epochs.
      std::vector<core::Record> outside_validation;
      std::span<const core::Record> pool = kd->unlabeled;
      if (ds->validation.count > 0 && request.data.validation_split == ValidationSplit::kTasks) {
        std::unordered_set<std::string> validation_tasks;
        for (std::int64_t g : ds->validation.groups) validation_tasks.insert(ds->task_keys[static_cast<std::size_t>(g)]);
        for (const core::Record& r : kd->unlabeled) {
          if (!validation_tasks.count(core::canonical_workload_key(r.workload_key))) outside_validation.push_back(r);
        }
        pool = outside_validation;
      }
      auto u = build_unlabeled_dataset(pool, request.platform, options);
      if (u) {
        unlabeled = std::move(*u);
        out.unlabeled_programs = unlabeled->train.count;
        Source src{.ds = &*unlabeled,
                   .train = to_tensors(unlabeled->train, *unlabeled, dev),
                   .descriptor = descriptor,
                   .groups = group_rows(unlabeled->train),
                   .labeled = false};
        src.max_batches = static_cast<std::int64_t>(std::ceil(kd->unlabeled_ratio * static_cast<double>(steps_per_epoch)));
        src.max_batches = std::min(src.max_batches, (chunks_per_epoch(src.groups, request.group_size) +
                                                     request.groups_per_batch - 1) / request.groups_per_batch);
        steps_per_epoch += src.max_batches;
        sources.push_back(std::move(src));
      } else if (u.status().code() != StatusCode::kFailedPrecondition) {  // no task of 2: nothing to add
        return u.status().with_context("train: unlabeled programs");
      }
    }
    for (Source& src : sources) {
      const DatasetSplit& split = src.ds->train;
      if (column) {
        auto c = frozen_scores(*column, split, src.ds->seq_len, ds->descriptor);
        if (!c) return c.status().with_context("train: active column");
        src.column_target = std::move(*c);
      }
      for (const auto& h : kd->old_descriptors) {
        auto t = frozen_scores(**teacher, split, src.ds->seq_len, h);
        if (!t) return t.status().with_context("train: teacher");
        src.old_targets.push_back(std::move(*t));
      }
    }
    if (!kd->teacher_fisher.empty() && kd->ewc_weight > 0) {
      auto f = fisher_tensors(kd->teacher_fisher, model);
      if (!f) return f.status();
      fisher = std::move(*f);
      torch::NoGradGuard no_grad;
      for (const torch::Tensor& p : model.parameters()) anchor.push_back(p.detach().clone());
    }
  }
  // Small sets get more epochs when min_steps asks for it.
  const int epochs = static_cast<int>(std::max<std::int64_t>(
      request.epochs, (request.min_steps + steps_per_epoch - 1) / std::max<std::int64_t>(steps_per_epoch, 1)));
  out.epochs_planned = epochs;
  const std::int64_t total_steps = steps_per_epoch * epochs;
  std::vector<std::int64_t> chunk_sizes;
  std::vector<float> batch_target;

  auto adamw = make_adamw(model, AdamWConfig{.lr = request.learning_rate, .weight_decay = request.weight_decay});
  const LambdaRankOptions loss_options{.sigma = request.lambda_sigma, .ndcg_at = request.ndcg_at};
  SplitMix64 rng{request.seed ^ kOrderSeedSalt};
  const auto cancelled = [&] { return request.cancel != nullptr && request.cancel->load(); };
  const auto over_budget = [&] {
    return request.time_budget_s > 0 && seconds_since(start) > request.time_budget_s;
  };

  // Training.
  const Clock::time_point train_start = Clock::now();
  // What the budget leaves for training (building the dataset came first).
  const double train_budget_s =
      request.time_budget_s > 0 ? std::max(1e-3, request.time_budget_s - seconds_since(start)) : 0.0;
  std::vector<std::int64_t> idx;
  std::vector<std::int64_t> local_group;
  // Early stopping: the best epoch's weights, by validation top-1.
  std::vector<torch::Tensor> best_weights;
  double best_score = 0;
  bool stop_early = false;
  for (int epoch = 1; epoch <= epochs && !out.budget_exhausted; ++epoch) {
    model.train();
    // (source, batch) pairs; with one source this is the primary's batches.
    std::vector<std::pair<std::size_t, std::vector<Chunk>>> batches;
    for (std::size_t k = 0; k < sources.size(); ++k) {
      auto source_batches = epoch_batches(sources[k].groups, sources[k].ds->train, request, rng);
      if (sources[k].max_batches >= 0 &&
          static_cast<std::int64_t>(source_batches.size()) > sources[k].max_batches) {
        source_batches.resize(static_cast<std::size_t>(sources[k].max_batches));  // shuffled: a random share
      }
      for (auto& b : source_batches) batches.emplace_back(k, std::move(b));
    }
    if (sources.size() > 1) shuffle(batches, rng);
    // Summed where the loss is and read once per epoch: a read per step
    // would stall a GPU's queue at every step.
    torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(dev));
    std::int64_t loss_steps = 0;
    for (const auto& [source_index, batch] : batches) {
      const Source& src = sources[source_index];
      if (cancelled()) return Status::cancelled("train: cancelled at epoch " + std::to_string(epoch));
      if (over_budget()) {
        out.budget_exhausted = true;
        break;
      }
      idx.clear();
      local_group.clear();
      chunk_sizes.clear();
      std::int32_t longest = 1;
      for (std::size_t k = 0; k < batch.size(); ++k) {
        chunk_sizes.push_back(static_cast<std::int64_t>(batch[k].size()));
        for (std::int64_t row : batch[k]) {
          idx.push_back(row);
          local_group.push_back(static_cast<std::int64_t>(k));
          longest = std::max(longest, src.ds->train.lengths[static_cast<std::size_t>(row)]);
        }
      }
      const auto b = static_cast<std::int64_t>(idx.size());
      const torch::Tensor index = upload(torch::from_blob(idx.data(), {b}, torch::kLong), dev);
      const torch::Tensor tokens = src.train.tokens.narrow(1, 0, longest).index_select(0, index);
      const torch::Tensor lengths = src.train.lengths.index_select(0, index);
      const torch::Tensor batch_groups = upload(torch::from_blob(local_group.data(), {b}, torch::kLong), dev);

      // The schedule follows the steps, or the clock when a time budget
      // would end the run first (then the LR still anneals before the cut).
      double t = static_cast<double>(out.steps) / static_cast<double>(std::max<std::int64_t>(total_steps, 1));
      if (train_budget_s > 0) t = std::max(t, seconds_since(train_start) / train_budget_s);
      set_lr(*adamw, lr_at(request, std::min(t, 1.0), total_steps));
      const torch::Tensor scores = model.forward(tokens, lengths, src.descriptor.expand({b, src.descriptor.size(1)}));
      torch::Tensor loss = src.labeled
                               ? lambda_rank_loss(scores, src.train.labels.index_select(0, index), batch_groups, loss_options)
                               : torch::zeros({}, scores.options());
      if (kd != nullptr) {
        const auto gather = [&](const std::vector<float>& all) {
          batch_target.resize(idx.size());
          for (std::size_t i = 0; i < idx.size(); ++i) batch_target[i] = all[static_cast<std::size_t>(idx[i])];
          return upload(torch::from_blob(batch_target.data(), {b}, torch::kFloat).clone(), dev);
        };
        loss = kd->label_weight * loss;
        if (!src.column_target.empty() && kd->column_weight > 0) {
          loss = loss + kd->column_weight * listwise_kd(scores, gather(src.column_target), chunk_sizes, kd->temperature);
        }
        for (std::size_t j = 0; j < src.old_targets.size() && kd->old_weight > 0; ++j) {
          const torch::Tensor old_scores =
              model.forward(tokens, lengths, old_descriptors[j].expand({b, old_descriptors[j].size(1)}));
          loss = loss + kd->old_weight * listwise_kd(old_scores, gather(src.old_targets[j]), chunk_sizes, kd->temperature);
        }
        if (!fisher.empty()) {
          torch::Tensor ewc = torch::zeros({}, scores.options());
          std::size_t i = 0;
          for (const torch::Tensor& p : model.parameters()) {
            ewc = ewc + (fisher[i] * (p - anchor[i]).pow(2)).sum();
            ++i;
          }
          loss = loss + kd->ewc_weight * ewc;
        }
      }
      adamw->zero_grad();
      loss.backward();
      if (request.grad_clip_norm > 0) clip_grad_norm(model.parameters(), request.grad_clip_norm);
      adamw->step();
      loss_sum += loss.detach().to(torch::kDouble);
      ++loss_steps;
      ++out.steps;
    }
    if (loss_steps == 0) break;  // the budget ran out before this epoch began
    const double epoch_loss = loss_sum.item<double>() / static_cast<double>(loss_steps);
    if (out.budget_exhausted) {
      // A partial epoch: report its loss without a val number (cancel still honoured).
      if (progress && !progress(epoch, epochs, epoch_loss, std::numeric_limits<double>::quiet_NaN())) {
        return Status::cancelled("train: cancelled at epoch " + std::to_string(epoch));
      }
      break;
    }
    out.epoch_losses.push_back(epoch_loss);
    out.epochs_done = epoch;
    if (validation.count > 0) {
      out.epoch_validation.push_back(evaluate(model, validation, descriptor));
      const double score = out.epoch_validation.back().top1.mean_ratio;
      if (out.best_epoch == 0 || score > best_score) {
        best_score = score;
        out.best_epoch = epoch;
        out.validation = out.epoch_validation.back();
        copy_weights(model, &best_weights);
      } else if (request.patience > 0 && epoch - out.best_epoch >= request.patience) {
        stop_early = true;
      }
    }
    double val_top1 = std::numeric_limits<double>::quiet_NaN();
    if (request.eval_each_epoch && eval.count > 0 && progress) {
      val_top1 = evaluate(model, eval, descriptor).top1.mean_ratio;
    }
    if (progress && !progress(epoch, epochs, epoch_loss, val_top1)) {
      return Status::cancelled("train: cancelled after epoch " + std::to_string(epoch));
    }
    if (stop_early || epoch == request.stop_after_epochs) break;
  }
  // The best epoch's weights (a budget cut after it also ran part of an epoch).
  if (!best_weights.empty() && (out.best_epoch != out.epochs_done || out.budget_exhausted)) {
    restore_weights(best_weights, &model);
  }
  model.eval();
  out.train_s = seconds_since(train_start);

  // Evaluation and checkpoint.
  const Clock::time_point eval_start = Clock::now();
  if (eval.count > 0) {
    out.eval_scores = score_split(model, eval, descriptor);
    out.metrics = evaluate_ranking(ds->eval.groups, ds->eval.latencies, out.eval_scores);
  }
  out.eval_s = seconds_since(eval_start);
  if (request.compute_fisher && request.fisher_batches > 0 && !groups.empty()) {
    // Diagonal empirical Fisher: squared gradients of the ranking loss,
    // averaged over batches of the training split, scaled to mean 1 (so
    // DistillTargets::ewc_weight means the same for every version).
    const Clock::time_point fisher_start = Clock::now();
    std::vector<torch::Tensor> sum;
    for (const torch::Tensor& p : model.parameters()) sum.push_back(torch::zeros_like(p));
    SplitMix64 fisher_rng{request.seed ^ 0xF15E5ULL};
    const auto batches = epoch_batches(groups, ds->train, request, fisher_rng);
    std::int64_t used = 0;
    for (const std::vector<Chunk>& batch : batches) {
      if (used == request.fisher_batches) break;
      idx.clear();
      local_group.clear();
      std::int32_t longest = 1;
      for (std::size_t k = 0; k < batch.size(); ++k) {
        for (std::int64_t row : batch[k]) {
          idx.push_back(row);
          local_group.push_back(static_cast<std::int64_t>(k));
          longest = std::max(longest, ds->train.lengths[static_cast<std::size_t>(row)]);
        }
      }
      const auto b = static_cast<std::int64_t>(idx.size());
      const torch::Tensor index = upload(torch::from_blob(idx.data(), {b}, torch::kLong), dev);
      const torch::Tensor scores = model.forward(train.tokens.narrow(1, 0, longest).index_select(0, index),
                                                 train.lengths.index_select(0, index),
                                                 descriptor.expand({b, descriptor.size(1)}));
      const torch::Tensor loss =
          lambda_rank_loss(scores, train.labels.index_select(0, index),
                           upload(torch::from_blob(local_group.data(), {b}, torch::kLong), dev), loss_options);
      model.zero_grad();
      loss.backward();
      std::size_t i = 0;
      for (const torch::Tensor& p : model.parameters()) {
        if (p.grad().defined()) sum[i] += p.grad().detach().pow(2);
        ++i;
      }
      ++used;
    }
    model.zero_grad();
    if (used > 0) {
      double total = 0;
      std::int64_t count = 0;
      for (const torch::Tensor& f : sum) {
        total += f.sum().item<double>();
        count += f.numel();
      }
      const double mean = total / static_cast<double>(std::max<std::int64_t>(count, 1));
      for (torch::Tensor& f : sum) f.div_(mean > 0 ? mean : 1.0);
      out.fisher = fisher_bytes(sum);
    }
    out.fisher_s = seconds_since(fisher_start);
  }
  if (!dev.is_cpu()) model.to(torch::kCPU);  // checkpoints hold CPU tensors: they load anywhere
  Result<std::string> bytes = CostModel::wrap(*made)->save();
  if (!bytes) return bytes.status().with_context("train");
  out.checkpoint = std::move(*bytes);
  out.wall_s = seconds_since(start);
  return out;
}

// A checkpoint's metrics on the training split that `options` makes of
// `records` (evaluate_checkpoint and zero_shot_fit), scored on `device`. No
// thread scope or exception guard: the callers hold them.
Result<RankingMetrics> score_training_split(std::string_view checkpoint, std::span<const core::Record> records,
                                            const Platform& platform, DatasetOptions options,
                                            const torch::Device& device) {
  auto model = CostModel::load(checkpoint);
  if (!model) return model.status();
  if (!device.is_cpu()) (*model)->score_model()->to(device);
  options.max_len = static_cast<int>(std::min<std::int64_t>(options.max_len, (*model)->config().max_len));
  Result<Dataset> ds = build_dataset(records, platform, options);
  if (!ds) return ds.status();
  if (Status s = init_fits((*model)->config(), *ds); !s) return s;
  const SplitTensors train = to_tensors(ds->train, *ds, device);
  return evaluate(*(*model)->score_model(), train, descriptor_tensor(ds->descriptor, device));
}

// zero_shot_fit without the thread scope and the exception guard.
Result<RankingMetrics> zero_shot_fit_unscoped(const TrainRequest& request, std::string_view checkpoint) {
  DatasetOptions options = request.data;
  options.validation_fraction = 0;
  Result<Device> device = resolve_device(request.device);
  if (!device) return device.status().with_context("zero-shot fit");
  Result<RankingMetrics> fit =
      score_training_split(checkpoint, request.records, request.platform, options, torch_device(*device));
  if (!fit) return fit.status().with_context("zero-shot fit");
  return fit;
}

// One training, then the refit when asked (TrainRequest::refit).
Result<TrainResult> train_and_refit(const TrainRequest& request, const ProgressCallback& progress,
                                    Clock::time_point start) {
  // The first run keeps its Fisher: it is the result when the budget cuts the refit.
  Result<TrainResult> first = run(request, progress, start);
  if (!first || !request.refit || first->best_epoch == 0) return first;
  // A budget already spent leaves the refit no time to train: keep the early-stopped model.
  if (first->budget_exhausted) return first;
  // Refit: the same start and schedule on every program, cut at the best epoch.
  TrainRequest again = request;
  again.data.validation_fraction = 0;
  again.refit = false;
  again.epochs = first->epochs_planned;
  again.min_steps = 0;
  again.stop_after_epochs = first->best_epoch;
  if (request.time_budget_s > 0) again.time_budget_s = std::max(1.0, request.time_budget_s - seconds_since(start));
  // Progress goes on counting: the refit's epochs follow the first run's.
  const int done = first->epochs_done;
  const ProgressCallback refit_progress =
      progress ? ProgressCallback([&](int epoch, int, double loss, double val) {
        return progress(done + epoch, done + first->best_epoch, loss, val);
      })
               : ProgressCallback();
  Result<TrainResult> second = run(again, refit_progress, Clock::now());
  if (!second) return second;
  if (second->budget_exhausted) return first;  // cut short: the early-stopped model is the better one
  second->refitted = true;
  second->best_epoch = first->best_epoch;
  second->validation = first->validation;
  second->epoch_validation = std::move(first->epoch_validation);
  second->wall_s = seconds_since(start);
  return second;
}

}  // namespace

bool long_schedule_needed(const RankingMetrics& zero_shot) { return !(zero_shot.pairwise_accuracy > 0.5); }

Result<RankingMetrics> zero_shot_fit(const TrainRequest& request, std::string_view checkpoint) {
  ThreadsScope threads(request.threads);
  try {
    return zero_shot_fit_unscoped(request, checkpoint);
  } catch (const std::exception& e) {
    return Status::internal(std::string("zero-shot fit: ") + e.what());
  }
}

Result<TrainResult> train_platform(const TrainRequest& request, const ProgressCallback& progress) {
  const Clock::time_point start = Clock::now();
  if (Status s = check_request(request); !s) return s;
  ThreadsScope threads(request.threads);
  try {
    if (!request.auto_schedule || request.init_checkpoint.empty()) return train_and_refit(request, progress, start);
    Result<RankingMetrics> fit = zero_shot_fit_unscoped(request, request.init_checkpoint);
    if (!fit) return fit.status().with_context("train");
    const bool far = long_schedule_needed(*fit);
    TrainRequest chosen = request;
    chosen.auto_schedule = false;
    if (far) {
      const TrainRequest::LongSchedule& l = request.long_schedule;
      if (l.validation_fraction > chosen.data.validation_fraction) {
        chosen.data.validation_fraction = l.validation_fraction;
        chosen.data.validation_split = ValidationSplit::kPrograms;
      }
      chosen.min_steps = std::max(chosen.min_steps, l.min_steps);
      chosen.patience = std::max(chosen.patience, l.patience);
    }
    Result<TrainResult> out = train_and_refit(chosen, progress, start);
    if (!out) return out;
    out->zero_shot = *fit;
    out->long_schedule_used = far;
    return out;
  } catch (const std::exception& e) {
    return Status::internal(std::string("train: ") + e.what());
  }
}

}  // namespace tcl::trainer

namespace tcl::trainer {

Result<RankingMetrics> evaluate_checkpoint(std::string_view checkpoint, std::span<const core::Record> records,
                                           const Platform& platform, const DatasetOptions& data, int threads) {
  ThreadsScope scope(threads);
  try {
    // The records of the split's tasks, as one split of their own.
    std::vector<core::Record> held_out;
    for (const core::Record& r : records) {
      if (data.eval_fraction > 0 &&
          core::in_holdout(core::canonical_workload_key(r.workload_key), data.eval_fraction, data.split_salt)) {
        held_out.push_back(r);
      }
    }
    if (held_out.empty()) return Status::failed_precondition("evaluate: the evaluation split holds no task");
    DatasetOptions options = data;
    options.eval_fraction = 0;
    options.max_records = data.max_eval_records;
    Result<RankingMetrics> m = score_training_split(checkpoint, held_out, platform, options, torch::kCPU);
    if (!m) return m.status().with_context("evaluate");
    return m;
  } catch (const std::exception& e) {
    return Status::internal(std::string("evaluate: ") + e.what());
  }
}

}  // namespace tcl::trainer
