// trainer/epoch_loop.cc — epochs of steps, the schedule, early stopping.
#include "trainer/epoch_loop.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "trainer/early_stopping.h"
#include "trainer/optimizer.h"

namespace tcl::trainer {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

namespace {

// The batch-order stream is seeded apart from init and dropout.
constexpr std::uint64_t kOrderSeedSalt = 0xD1B54A32D192ED03ULL;

void set_lr(torch::optim::Optimizer& opt, double lr) {
  for (auto& group : opt.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
}

// Linear warm-up, then cosine decay from peak to 5% of it; t in [0, 1] is
// the share of the run done (steps, or the clock under a time budget).
double lr_at(const Optimisation& r, double t, std::int64_t total_steps) {
  if (r.warmup_fraction > 0 && t < r.warmup_fraction) {
    const double first = 1.0 / static_cast<double>(std::max<std::int64_t>(total_steps, 1));
    return r.learning_rate * std::min(1.0, (t + first) / r.warmup_fraction);
  }
  const double w = r.warmup_fraction;
  const double u = std::clamp((t - w) / std::max(1e-12, 1.0 - w), 0.0, 1.0);
  constexpr double kFloor = 0.05;
  return r.learning_rate * (kFloor + (1.0 - kFloor) * 0.5 * (1.0 + std::cos(M_PI * u)));
}

// (source, batch) pairs of one epoch: every source's batches in source
// order, cut to its max_batches (they are shuffled: a random share), then
// shuffled together when there are several sources.
std::vector<std::pair<std::size_t, ChunkBatch>> epoch_plan(const std::vector<BatchSource>& sources,
                                                           const BatchShape& shape, SplitMix64& rng) {
  std::vector<std::pair<std::size_t, ChunkBatch>> batches;
  for (std::size_t k = 0; k < sources.size(); ++k) {
    auto source_batches = epoch_batches(sources[k].groups, sources[k].ds->train, shape, rng);
    if (sources[k].max_batches >= 0 && static_cast<std::int64_t>(source_batches.size()) > sources[k].max_batches) {
      source_batches.resize(static_cast<std::size_t>(sources[k].max_batches));
    }
    for (auto& b : source_batches) batches.emplace_back(k, std::move(b));
  }
  if (sources.size() > 1) shuffle(batches, rng);
  return batches;
}

// What the steps of every epoch share.
struct Stepper {
  ScoreModel& model;
  const std::vector<BatchSource>& sources;
  const DistillTerms* distill;
  const Optimisation& opt;
  const Resources& resources;
  const EpochPlan& plan;
  torch::optim::Optimizer& adamw;
  WeightAverage* average;  // null = none
  LabelLossOptions loss_options;
  Clock::time_point train_start;
  double train_budget_s;  // what the budget leaves for training; 0 = none

  bool cancelled() const { return resources.cancel != nullptr && resources.cancel->load(); }
  bool over_budget() const {
    return resources.time_budget_s > 0 && seconds_since(plan.start) > resources.time_budget_s;
  }

  // One optimizer step; returns the (detached) loss.
  torch::Tensor step(const BatchSource& src, const ChunkBatch& chunks, std::int64_t steps_done) {
    const Batch batch = gather_batch(chunks, src.train);
    // The schedule follows the steps, or the clock when a time budget
    // would end the run first (then the LR still anneals before the cut).
    // The clock counts one step behind: at step 0 the steps' share is 0 and
    // any clock leads, so a budget that never binds would otherwise nudge
    // step 0's rate by the milliseconds it took.
    const double total = static_cast<double>(std::max<std::int64_t>(plan.total_steps, 1));
    double t = static_cast<double>(steps_done) / total;
    if (train_budget_s > 0) t = std::max(t, seconds_since(train_start) / train_budget_s - 1.0 / total);
    set_lr(adamw, lr_at(opt, std::min(t, 1.0), plan.total_steps));
    const torch::Tensor loss = batch_loss(model, src, batch, distill, loss_options);
    adamw.zero_grad();
    loss.backward();
    if (opt.grad_clip_norm > 0) clip_grad_norm(model.parameters(), opt.grad_clip_norm);
    adamw.step();
    if (average != nullptr) average->update();
    return loss.detach();
  }

  // The steps of one epoch: loss their mean, *steps how many ran.
  Status epoch(int number, SplitMix64& rng, TrainResult* out, double* loss, std::int64_t* steps) {
    model.train();
    const BatchShape shape{opt.groups_per_batch, opt.group_size, opt.bucket_by_length};
    const auto batches = epoch_plan(sources, shape, rng);
    const torch::Device device = sources.front().train.tokens.device();
    torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
    std::int64_t loss_steps = 0;
    for (const auto& [source_index, chunks] : batches) {
      if (cancelled()) return Status::cancelled("train: cancelled at epoch " + std::to_string(number));
      if (over_budget()) {
        out->budget_exhausted = true;
        break;
      }
      loss_sum += step(sources[source_index], chunks, out->steps).to(torch::kDouble);
      ++loss_steps;
      ++out->steps;
    }
    *steps = loss_steps;
    if (loss_steps > 0) *loss = loss_sum.item<double>() / static_cast<double>(loss_steps);
    return Status::ok();
  }
};

}  // namespace

Status run_epochs(ScoreModel& model, const std::vector<BatchSource>& sources, const DistillTerms* distill,
                  const LoopSplits& splits, const Optimisation& opt, const Resources& resources, const EpochPlan& plan,
                  const ProgressCallback& progress, TrainResult* out) {
  auto adamw = make_adamw(model, AdamWConfig{.lr = opt.learning_rate, .weight_decay = opt.weight_decay});
  const Clock::time_point train_start = Clock::now();
  const double train_budget_s =
      resources.time_budget_s > 0 ? std::max(1e-3, resources.time_budget_s - seconds_since(plan.start)) : 0.0;
  std::optional<WeightAverage> average;
  if (opt.ema_decay > 0) average.emplace(model.parameters(), opt.ema_decay);
  Stepper stepper{model,
                  sources,
                  distill,
                  opt,
                  resources,
                  plan,
                  *adamw,
                  average ? &*average : nullptr,
                  label_loss_options(opt),
                  train_start,
                  train_budget_s};
  SplitMix64 rng{opt.seed ^ kOrderSeedSalt};
  EarlyStopping early(opt.patience);
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  for (int epoch = 1; epoch <= plan.epochs && !out->budget_exhausted; ++epoch) {
    double loss = 0;
    std::int64_t steps = 0;
    if (average && epoch > 1) average->swap();  // the steps go on from the last step's weights
    if (Status s = stepper.epoch(epoch, rng, out, &loss, &steps); !s) return s;
    if (average) average->swap();  // between epochs the model holds the average: judged, kept, returned
    if (steps == 0) break;         // the budget ran out before this epoch began
    if (out->budget_exhausted) {
      // A partial epoch: report its loss without a val number (cancel still honoured).
      if (progress && !progress(epoch, plan.epochs, loss, kNaN)) {
        return Status::cancelled("train: cancelled at epoch " + std::to_string(epoch));
      }
      break;
    }
    out->epoch_losses.push_back(loss);
    out->epochs_done = epoch;
    bool stop = false;
    if (splits.validation->count > 0) {
      out->epoch_validation.push_back(evaluate(model, *splits.validation, splits.descriptor));
      stop = early.observe(epoch, out->epoch_validation.back(), model);
      out->best_epoch = early.best_epoch();
      out->validation = early.best();
    }
    double val_top1 = kNaN;
    if (resources.eval_each_epoch && splits.eval->count > 0 && progress) {
      val_top1 = evaluate(model, *splits.eval, splits.descriptor).top1.mean_ratio;
    }
    if (progress && !progress(epoch, plan.epochs, loss, val_top1)) {
      return Status::cancelled("train: cancelled after epoch " + std::to_string(epoch));
    }
    if (stop || epoch == opt.stop_after_epochs) break;
  }
  // The best epoch's weights (a budget cut after it also ran part of an epoch).
  if (early.best_epoch() > 0 && (out->best_epoch != out->epochs_done || out->budget_exhausted)) {
    early.restore_best(model);
  }
  model.eval();
  out->train_s = seconds_since(train_start);
  return Status::ok();
}

}  // namespace tcl::trainer
