// trainer/train_job.cc — a request in, a trained checkpoint out: the data,
// the model, the batch sources (joint platforms, a distillation's pool and
// targets), the epochs (epoch_loop.h), the final evaluation, the Fisher
// (fisher.h) and the checkpoint; refit and auto_schedule around it. Every
// torch exception becomes a Status here.
#include "trainer/train_job.h"

#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/program_id.h"
#include "core/random.h"
#include "core/task_split.h"
#include "trainer/adapter.h"
#include "trainer/batches.h"
#include "trainer/cost_model.h"
#include "trainer/device_internal.h"
#include "trainer/distillation.h"
#include "trainer/epoch_loop.h"
#include "trainer/fast_inference.h"
#include "trainer/fisher.h"
#include "trainer/objective.h"
#include "trainer/score_model.h"

namespace tcl::trainer {
namespace {

// The Fisher's batch-order stream, apart from training's.
constexpr std::uint64_t kFisherSeedSalt = 0xF15E5ULL;

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

Status check_optimisation(const Optimisation& r) {
  if (r.epochs < 1) return Status::invalid_argument("train: epochs must be >= 1");
  if (r.min_steps < 0 || r.min_steps > 1'000'000)
    return Status::invalid_argument("train: min_steps must be in [0, 1e6]");
  if (r.patience < 0) return Status::invalid_argument("train: patience must be >= 0");
  if (r.stop_after_epochs < 0) return Status::invalid_argument("train: stop_after_epochs must be >= 0");
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
  if (!(r.gain_power > 0)) return Status::invalid_argument("train: gain_power must be > 0");
  if (!(r.listwise_beta > 0)) return Status::invalid_argument("train: listwise_beta must be > 0");
  if (!(r.ema_decay >= 0 && r.ema_decay < 1)) return Status::invalid_argument("train: ema_decay must be in [0, 1)");
  return Status::ok();
}

Status check_resources(const Resources& r) {
  if (r.threads < 0) return Status::invalid_argument("train: threads must be >= 0");
  if (!(r.time_budget_s >= 0)) return Status::invalid_argument("train: time_budget_s must be >= 0");
  return Status::ok();
}

// The fine-tune a start is (a Distill's teacher too), or null.
const FineTune* fine_tune_of(const TrainStart& start) {
  if (const auto* tune = std::get_if<FineTune>(&start)) return tune;
  if (const auto* distill = std::get_if<Distill>(&start)) return &distill->teacher;
  return nullptr;
}
FineTune* fine_tune_of(TrainStart& start) {
  return const_cast<FineTune*>(fine_tune_of(static_cast<const TrainStart&>(start)));
}

Status check_start(const TrainStart& start) {
  const auto* distill = std::get_if<Distill>(&start);
  if (distill != nullptr && distill->levers.student_from_column && distill->targets.column_checkpoint.empty())
    return Status::invalid_argument("train: student_from_column needs the column's checkpoint");
  const FineTune* tune = fine_tune_of(start);
  if (tune == nullptr) return Status::ok();
  if (tune->adapter.rank != 0) {
    if (distill != nullptr) return Status::invalid_argument("train: an adapter is a fine-tune's, not a distill's");
    if (tune->adapter.rank < 0 || tune->adapter.rank > kMaxAdapterRank) {
      return Status::invalid_argument("train: adapter rank must be in [1, " + std::to_string(kMaxAdapterRank) +
                                      "] (0 = none)");
    }
    if (tune->init_checkpoint.empty()) return Status::invalid_argument("train: an adapter needs init_checkpoint");
  }
  const FineTune::LongSchedule& l = tune->long_schedule;
  if (!(l.validation_fraction >= 0 && l.validation_fraction < 1) || l.min_steps < 0 || l.min_steps > 1'000'000 ||
      l.patience < 0) {
    return Status::invalid_argument(
        "train: long_schedule needs validation_fraction in [0, 1), min_steps in [0, 1e6] and patience >= 0");
  }
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

// One training run's inputs, from either request type.
struct RunInput {
  const TrainData* data = nullptr;   // records; null with a prebuilt dataset
  const Dataset* dataset = nullptr;  // prebuilt; null with records
  const ModelConfig* model = nullptr;
  const Optimisation* opt = nullptr;
  const Resources* resources = nullptr;
  const FisherOptions* fisher = nullptr;
  std::string_view init_checkpoint = {};  // a FineTune's (a Distill's teacher, or its column: student_from_column)
  const JointTraining* joint = nullptr;
  const Distill* distill = nullptr;
  AdapterOptions adapter = {};  // a FineTune's (check_start: none in a Distill)
};

RunInput input_of(const TrainRequest& r) {
  RunInput in{
      .data = &r.data, .model = &r.model, .opt = &r.optimisation, .resources = &r.resources, .fisher = &r.fisher};
  if (const FineTune* tune = fine_tune_of(r.start)) {
    in.init_checkpoint = tune->init_checkpoint;
    in.adapter = tune->adapter;
  }
  in.joint = std::get_if<JointTraining>(&r.start);
  in.distill = std::get_if<Distill>(&r.start);
  if (in.distill != nullptr && in.distill->levers.student_from_column) {
    in.init_checkpoint = in.distill->targets.column_checkpoint;  // check_start: not empty
  }
  return in;
}

// The dataset: the prebuilt one, or built from the records into *built.
Result<const Dataset*> load_data(const RunInput& in, std::optional<Dataset>* built) {
  if (in.dataset != nullptr) return in.dataset;
  DatasetOptions options = in.data->options;
  options.max_len = static_cast<int>(std::min<std::int64_t>(options.max_len, in.model->max_len));
  Result<Dataset> made = build_dataset(in.data->records, in.data->platform, options);
  if (!made) return made.status().with_context("train");
  *built = std::move(*made);
  return &**built;
}

// A fresh model of the request's config (shapes from the data), or the
// init checkpoint's; *config is what was built.
Result<std::shared_ptr<ScoreModel>> make_model(const RunInput& in, const Dataset& ds, ModelConfig* config) {
  *config = *in.model;
  config->token_dim = ds.token_dim;
  config->descriptor_dim = static_cast<std::int64_t>(ds.descriptor.size());
  config->seed = in.opt->seed;
  if (ds.encoding == TokenEncoding::kTlp) config->max_len = ds.seq_len;
  if (ds.seq_len > config->max_len) {
    return Status::invalid_argument("train: the data's sequence length " + std::to_string(ds.seq_len) +
                                    " exceeds the model's max_len " + std::to_string(config->max_len));
  }
  if (in.init_checkpoint.empty()) {
    Result<std::shared_ptr<ScoreModel>> made = make_score_model(*config);
    if (!made) return made.status().with_context("train");
    return made;
  }
  auto init = CostModel::load(in.init_checkpoint);
  if (!init) return init.status().with_context("train: init_checkpoint");
  if (Status s = init_fits((*init)->config(), ds); !s) return s.with_context("train");
  *config = (*init)->config();
  if (in.adapter.rank > 0) {
    Result<std::int64_t> added = add_adapter(*(*init)->score_model(), in.adapter, in.opt->seed);
    if (!added) return added.status();
  }
  return (*init)->score_model();
}

// The joint platforms' datasets (into *storage) and their batch sources.
Status add_joint_sources(const JointTraining& joint, const TrainData& data, const Dataset& primary,
                         const ModelConfig& config, const torch::Device& dev, std::vector<Dataset>* storage,
                         std::vector<BatchSource>* sources) {
  DatasetOptions options = data.options;
  options.max_len = static_cast<int>(std::min<std::int64_t>(options.max_len, config.max_len));
  options.validation_fraction = 0;  // validation is the primary platform's
  storage->reserve(joint.platforms.size());
  for (const auto& j : joint.platforms) {
    Result<Dataset> made = build_dataset(j.records, j.platform, options);
    if (!made) return made.status().with_context("train: joint platform " + j.platform.target);
    if (made->token_dim != primary.token_dim || made->seq_len > config.max_len) {
      return Status::invalid_argument("train: a joint platform's data does not fit the model");
    }
    storage->push_back(std::move(*made));
  }
  for (const Dataset& d : *storage) {
    sources->push_back(BatchSource{.ds = &d,
                                   .train = to_tensors(d.train, d, dev),
                                   .descriptor = descriptor_tensor(d.descriptor, dev),
                                   .groups = group_rows(d.train)});
  }
  return Status::ok();
}

// Resources::phase, when set.
void report_phase(const RunInput& in, std::string_view phase, std::int64_t done, std::int64_t total,
                  std::string_view unit) {
  if (in.resources->phase) in.resources->phase(PhaseProgress{phase, done, total, unit});
}

// The Fisher over the first `batches` batches of a seeded epoch of the training split.
std::string fisher_of(ScoreModel& model, const BatchSource& primary, const RunInput& in) {
  const Optimisation& opt = *in.opt;
  const BatchShape shape{opt.groups_per_batch, opt.group_size, opt.bucket_by_length};
  SplitMix64 rng{opt.seed ^ kFisherSeedSalt};
  std::vector<ChunkBatch> batches = epoch_batches(primary.groups, primary.ds->train, shape, rng);
  if (static_cast<std::int64_t>(batches.size()) > in.fisher->batches) {
    batches.resize(static_cast<std::size_t>(in.fisher->batches));
  }
  const auto total = static_cast<std::int64_t>(batches.size());
  report_phase(in, "fisher", 0, total, "batches");
  return fisher_bytes(diagonal_fisher(
      model, primary.train, primary.descriptor, batches, label_loss_options(opt),
      [&](std::size_t done) { report_phase(in, "fisher", static_cast<std::int64_t>(done), total, "batches"); }));
}

// After training: the eval split's scores and metrics, the Fisher, the checkpoint.
Status finish(std::shared_ptr<ScoreModel> made, const BatchSource& primary, const SplitTensors& eval,
              const RunInput& in, TrainResult* out) {
  if (has_adapter(*made)) {  // folded first: the Fisher and the checkpoint are a plain model's
    Result<std::string> adapter = save_adapter(*made);
    if (!adapter) return adapter.status();
    out->adapter = std::move(*adapter);
    Result<std::shared_ptr<ScoreModel>> plain = fold_adapter(*made);
    if (!plain) return plain.status();
    made = std::move(*plain);
    made->to(primary.descriptor.device());
  }
  ScoreModel& model = *made;
  const Clock::time_point eval_start = Clock::now();
  if (eval.count > 0) {
    report_phase(in, "evaluating", 0, eval.count, "programs");
    out->eval_scores = score_split(model, eval, primary.descriptor, [&](std::int64_t scored) {
      report_phase(in, "evaluating", scored, eval.count, "programs");
    });
    out->metrics = evaluate_ranking(eval.split->groups, eval.split->latencies, out->eval_scores);
  }
  out->eval_s = seconds_since(eval_start);
  if (in.fisher->compute && in.fisher->batches > 0 && !primary.groups.empty()) {
    const Clock::time_point fisher_start = Clock::now();
    out->fisher = fisher_of(model, primary, in);
    out->fisher_s = seconds_since(fisher_start);
  }
  report_phase(in, "saving", 0, 1, "checkpoints");
  if (!eval.tokens.is_cpu()) model.to(torch::kCPU);  // checkpoints hold CPU tensors: they load anywhere
  Result<std::string> bytes = CostModel::wrap(std::move(made))->save();
  if (!bytes) return bytes.status().with_context("train");
  out->checkpoint = std::move(*bytes);
  report_phase(in, "saving", 1, 1, "checkpoints");
  return Status::ok();
}

// One training run: data, model, sources, epochs, finish.
Result<TrainResult> run(const RunInput& in, const ProgressCallback& progress, Clock::time_point start) {
  TrainResult out;
  Result<Device> resolved = resolve_device(in.resources->device);
  if (!resolved) return resolved.status().with_context("train");
  out.device = *resolved;
  const torch::Device dev = torch_device(*resolved);

  std::optional<Dataset> built;
  Result<const Dataset*> loaded = load_data(in, &built);
  if (!loaded) return loaded.status();
  const Dataset& ds = **loaded;
  if (in.dataset == nullptr) out.dataset_s = seconds_since(start);
  out.data = ds.summary;
  out.encoding = ds.encoding;

  ModelConfig config;
  Result<std::shared_ptr<ScoreModel>> made = make_model(in, ds, &config);
  if (!made) return made.status();
  ScoreModel& model = **made;
  out.config = config;
  out.num_parameters = model.num_parameters();
  if (in.adapter.rank > 0) {
    for (const auto& p : model.named_parameters()) {
      out.adapter_parameters += p.key().find("lora_") != std::string::npos ? p.value().numel() : 0;
    }
    out.num_parameters -= out.adapter_parameters;  // the model's own: folded away before the checkpoint
  }
  if (!dev.is_cpu()) model.to(dev);  // built (or loaded) on the CPU; back there before saving

  const SplitTensors eval = to_tensors(ds.eval, ds, dev);
  const SplitTensors validation = to_tensors(ds.validation, ds, dev);
  std::vector<BatchSource> sources;
  sources.push_back(BatchSource{.ds = &ds,
                                .train = to_tensors(ds.train, ds, dev),
                                .descriptor = descriptor_tensor(ds.descriptor, dev),
                                .groups = group_rows(ds.train)});
  std::vector<Dataset> joint_data;
  if (in.joint != nullptr) {
    if (Status s = add_joint_sources(*in.joint, *in.data, ds, config, dev, &joint_data, &sources); !s) return s;
  }
  const BatchShape shape{in.opt->groups_per_batch, in.opt->group_size, in.opt->bucket_by_length};
  DistillInputs distill_inputs;
  std::optional<DistillTerms> distill;
  if (in.distill != nullptr) {
    const DistillSetup setup{.distill = in.distill,
                             .data = in.data,
                             .dataset = &ds,
                             .config = &config,
                             .seed = in.opt->seed,
                             .shape = shape,
                             .device = dev};
    Result<DistillTerms> terms = prepare_distillation(setup, model, &sources, &distill_inputs);
    if (!terms) return terms.status();
    distill = std::move(*terms);
    if (distill_inputs.pool) out.unlabeled_programs = distill_inputs.pool->train.count;
    if (distill_inputs.old_bank) out.old_bank_programs = distill_inputs.old_bank->train.count;
  }
  // Small sets get more epochs when min_steps asks for it.
  std::int64_t steps_per_epoch = 0;
  for (const BatchSource& src : sources) {
    const std::int64_t n = batches_per_epoch(src.groups, shape);
    steps_per_epoch += src.max_batches >= 0 ? std::min(n, src.max_batches) : n;
  }
  const int epochs = static_cast<int>(std::max<std::int64_t>(
      in.opt->epochs, (in.opt->min_steps + steps_per_epoch - 1) / std::max<std::int64_t>(steps_per_epoch, 1)));
  out.epochs_planned = epochs;
  const EpochPlan plan{.epochs = epochs, .total_steps = steps_per_epoch * epochs, .start = start};
  const LoopSplits splits{.validation = &validation, .eval = &eval, .descriptor = sources.front().descriptor};
  if (Status s = run_epochs(model, sources, distill ? &*distill : nullptr, splits, *in.opt, *in.resources, plan,
                            progress, &out);
      !s) {
    return s;
  }
  if (in.distill != nullptr) {
    const Distill& d = *in.distill;
    if (Status s = mix_with_teacher(model, d.teacher.init_checkpoint, d.levers.teacher_mix); !s) return s;
  }
  if (Status s = finish(*made, sources.front(), eval, in, &out); !s) return s;
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

// One model's scores of a dataset's (train) split on the CPU: the fast path for a Mamba model.
Result<std::vector<float>> cpu_scores(const CostModel& model, const Dataset& ds, int threads) {
  const DatasetSplit& split = ds.train;
  std::vector<float> out(static_cast<std::size_t>(split.count));
  const FeatureBatch batch{split.count, ds.seq_len, split.tokens, split.lengths, ds.descriptor};
  if (model.config().kind == ModelKind::kMamba) {
    auto fast = StudentInference::create(model, InferenceOptions{.threads = threads});
    if (!fast) return fast.status();
    if (Status s = (*fast)->predict(batch, out); !s) return s;
    return out;
  }
  if (Status s = model.predict(batch, out); !s) return s;
  return out;
}

// zero_shot_fit without the thread scope and the exception guard.
Result<RankingMetrics> zero_shot_fit_unscoped(const TrainRequest& request, std::string_view checkpoint) {
  DatasetOptions options = request.data.options;
  options.validation_fraction = 0;
  Result<Device> device = resolve_device(request.resources.device);
  if (!device) return device.status().with_context("zero-shot fit");
  Result<RankingMetrics> fit =
      score_training_split(checkpoint, request.data.records, request.data.platform, options, torch_device(*device));
  if (!fit) return fit.status().with_context("zero-shot fit");
  return fit;
}

// One training, then the refit when asked (TrainData::refit).
Result<TrainResult> train_and_refit(const TrainRequest& request, const ProgressCallback& progress,
                                    Clock::time_point start) {
  // The first run keeps its Fisher: it is the result when the budget cuts the refit.
  Result<TrainResult> first = run(input_of(request), progress, start);
  if (!first || !request.data.refit || first->best_epoch == 0) return first;
  // A budget already spent leaves the refit no time to train: keep the early-stopped model.
  if (first->budget_exhausted) return first;
  // Refit: the same start and schedule on every program, cut at the best epoch.
  TrainRequest again = request;
  again.data.options.validation_fraction = 0;
  again.data.refit = false;
  again.optimisation.epochs = first->epochs_planned;
  again.optimisation.min_steps = 0;
  again.optimisation.stop_after_epochs = first->best_epoch;
  const double budget = request.resources.time_budget_s;
  if (budget > 0) again.resources.time_budget_s = std::max(1.0, budget - seconds_since(start));
  // Progress goes on counting: the refit's epochs follow the first run's.
  const int done = first->epochs_done;
  const ProgressCallback refit_progress = progress ? ProgressCallback([&](int epoch, int, double loss, double val) {
    return progress(done + epoch, done + first->best_epoch, loss, val);
  })
                                                   : ProgressCallback();
  Result<TrainResult> second = run(input_of(again), refit_progress, Clock::now());
  if (!second) return second;
  if (second->budget_exhausted) return first;  // cut short: the early-stopped model is the better one
  second->refitted = true;
  second->best_epoch = first->best_epoch;
  second->validation = first->validation;
  second->epoch_validation = std::move(first->epoch_validation);
  second->wall_s = seconds_since(start);
  return second;
}

// auto_schedule: the zero-shot fit decides between the request and the long schedule.
Result<TrainResult> train_auto_scheduled(const TrainRequest& request, const FineTune& tune,
                                         const ProgressCallback& progress, Clock::time_point start) {
  Result<RankingMetrics> fit = zero_shot_fit_unscoped(request, tune.init_checkpoint);
  if (!fit) return fit.status().with_context("train");
  const bool far = long_schedule_needed(*fit);
  TrainRequest chosen = request;
  fine_tune_of(chosen.start)->auto_schedule = false;
  if (far) {
    const FineTune::LongSchedule& l = tune.long_schedule;
    DatasetOptions& options = chosen.data.options;
    if (l.validation_fraction > options.validation_fraction) {
      options.validation_fraction = l.validation_fraction;
      options.validation_split = ValidationSplit::kPrograms;
    }
    chosen.optimisation.min_steps = std::max(chosen.optimisation.min_steps, l.min_steps);
    chosen.optimisation.patience = std::max(chosen.optimisation.patience, l.patience);
  }
  Result<TrainResult> out = train_and_refit(chosen, progress, start);
  if (!out) return out;
  out->zero_shot = *fit;
  out->long_schedule_used = far;
  return out;
}

}  // namespace

bool long_schedule_needed(const RankingMetrics& zero_shot) { return !(zero_shot.pairwise_accuracy > 0.5); }

Result<RankingMetrics> zero_shot_fit(const TrainRequest& request, std::string_view checkpoint) {
  ThreadsScope threads(request.resources.threads);
  try {
    return zero_shot_fit_unscoped(request, checkpoint);
  } catch (const std::exception& e) {
    return Status::internal(std::string("zero-shot fit: ") + e.what());
  }
}

Result<TrainResult> train_platform(const TrainRequest& request, const ProgressCallback& progress) {
  const Clock::time_point start = Clock::now();
  for (Status s :
       {check_optimisation(request.optimisation), check_resources(request.resources), check_start(request.start)}) {
    if (!s) return s;
  }
  ThreadsScope threads(request.resources.threads);
  try {
    const FineTune* tune = fine_tune_of(request.start);
    if (tune == nullptr || !tune->auto_schedule) return train_and_refit(request, progress, start);
    return train_auto_scheduled(request, *tune, progress, start);
  } catch (const std::exception& e) {
    return Status::internal(std::string("train: ") + e.what());
  }
}

Result<TrainResult> train_platform(const DatasetTrainRequest& request, const ProgressCallback& progress) {
  const Clock::time_point start = Clock::now();
  if (request.dataset == nullptr) return Status::invalid_argument("train: no dataset");
  for (Status s : {check_optimisation(request.optimisation), check_resources(request.resources)}) {
    if (!s) return s;
  }
  ThreadsScope threads(request.resources.threads);
  try {
    const RunInput in{.dataset = request.dataset,
                      .model = &request.model,
                      .opt = &request.optimisation,
                      .resources = &request.resources,
                      .fisher = &request.fisher};
    return run(in, progress, start);
  } catch (const std::exception& e) {
    return Status::internal(std::string("train: ") + e.what());
  }
}

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

std::int64_t default_max_records(Device device) {
  return device == Device::kCuda ? 0 : TrainData::default_options().max_records;
}

Result<ScoredPrograms> score_checkpoints(std::span<const std::string_view> checkpoints,
                                         std::span<const core::Record> records, const Platform& platform, int threads) {
  DatasetOptions options = TrainRequest::default_data_options();
  options.max_records = 0;
  return score_checkpoints(checkpoints, records, platform, options, threads);
}

Result<ScoredPrograms> score_checkpoints(std::span<const std::string_view> checkpoints,
                                         std::span<const core::Record> records, const Platform& platform,
                                         const DatasetOptions& given, int threads) {
  ThreadsScope scope(threads);
  try {
    DatasetOptions options = given;
    options.eval_fraction = 0;
    const int cap = options.max_len;  // a checkpoint's max_len cuts below it
    ScoredPrograms out;
    std::optional<Dataset> ds;  // rebuilt only when a checkpoint's max_len cuts it otherwise
    for (std::string_view checkpoint : checkpoints) {
      auto model = CostModel::load(checkpoint);
      if (!model) return model.status().with_context("score");
      const int max_len = std::min(cap, static_cast<int>((*model)->config().max_len));
      if (!ds || max_len != options.max_len) {
        options.max_len = max_len;
        Result<Dataset> built = build_dataset(records, platform, options);
        if (!built) return built.status().with_context("score");
        ds = std::move(*built);
        if (out.scores.empty()) {
          out.task_keys = ds->task_keys;
          out.groups = ds->train.groups;
          out.latencies = ds->train.latencies;
        } else if (ds->train.groups != out.groups || ds->train.latencies != out.latencies) {
          return Status::internal("score: the programs differ between checkpoints");  // not expected: cut only
        }
      }
      if (Status s = init_fits((*model)->config(), *ds); !s) return s.with_context("score");
      Result<std::vector<float>> scores = cpu_scores(**model, *ds, threads);
      if (!scores) return scores.status().with_context("score");
      out.scores.push_back(std::move(*scores));
    }
    return out;
  } catch (const std::exception& e) {
    return Status::internal(std::string("score: ") + e.what());
  }
}

}  // namespace tcl::trainer
