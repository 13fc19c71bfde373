#include "daemon/job_worker.h"

#include <spdlog/spdlog.h>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <thread>
#include <unordered_set>

#include "core/features.h"
#include "core/mutex.h"
#include "core/program_id.h"
#include "core/record.h"
#include "core/task_split.h"
#include "api/job_options.h"
#include "api/metrics.h"
#include "onboarding/distill.h"
#include "onboarding/promotion_gate.h"
#include "trainer/cost_model.h"
#include "trainer/train_job.h"

namespace tcl::daemon {
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

struct JobWorker::Metrics {
  explicit Metrics(prometheus::Registry& r)
      : epoch(api::gauge_family(r, "tcld_training_epoch", "Epochs finished by the job running for a platform.")),
        loss(api::gauge_family(r, "tcld_training_loss",
                               "Mean LambdaRank loss of the last finished epoch, by platform.")),
        val_top1(api::gauge_family(r, "tcld_training_validation_top1",
                                   "Top-1 (mean over held-out tasks) after the last epoch, by platform.")),
        epochs(api::gauge_family(r, "tcld_training_epochs",
                                 "Epochs asked for by the job running for a platform (progress = epoch / epochs).")),
        finished(api::counter_family(r, "tcld_training_jobs_finished_total",
                                     "Jobs this process finished, by kind and outcome (succeeded, failed).")) {}
  prometheus::Family<prometheus::Gauge>& epoch;
  prometheus::Family<prometheus::Gauge>& loss;
  prometheus::Family<prometheus::Gauge>& val_top1;
  prometheus::Family<prometheus::Gauge>& epochs;
  prometheus::Family<prometheus::Counter>& finished;
};

namespace {

trainer::TrainRequest make_request(const api::JobOptions& o, const registry::PlatformRow& platform,
                                   const std::vector<core::Record>& records) {
  trainer::TrainRequest request;
  request.data.records = records;
  request.data.platform = registry::core_platform(platform);
  request.data.options.eval_fraction = o.eval_fraction;
  request.data.options.max_records = o.max_records;
  request.model.kind = o.model == "attention" ? trainer::ModelKind::kAttention
                       : o.model == "mlp"     ? trainer::ModelKind::kMlp
                                              : trainer::ModelKind::kMamba;
  request.optimisation.epochs = o.epochs;
  request.optimisation.learning_rate = o.learning_rate;
  request.optimisation.min_steps = o.min_steps;
  request.data.options.validation_fraction = o.validation_fraction;
  if (o.validation_by_tasks) request.data.options.validation_split = trainer::ValidationSplit::kTasks;
  request.optimisation.patience = o.patience;
  request.data.refit = o.refit;
  request.optimisation.seed = o.seed;
  request.resources.time_budget_s = o.time_budget_s;
  return request;
}

// Whether a program falls in a deterministic share `keep` of all programs
// (by the first 32 bits of its id: the same programs at every read).
bool in_share(const std::string& program_id, double keep) {
  if (keep >= 1.0) return true;
  return static_cast<double>(std::stoul(program_id.substr(0, 8), nullptr, 16)) / 4294967296.0 < keep;
}

json::object metrics_json(const trainer::RankingMetrics& m) {
  return json::object{{"top1", m.top1.mean_ratio},
                      {"top1_sum_ratio", m.top1.sum_ratio},
                      {"top5", m.top5.mean_ratio},
                      {"top5_sum_ratio", m.top5.sum_ratio},
                      {"random_top1", m.random_top1.mean_ratio},
                      {"random_top5", m.random_top5.mean_ratio},
                      {"pairwise_accuracy", m.pairwise_accuracy},
                      {"tuning_proxy", m.tuning.geomean_ratio},
                      {"random_tuning_proxy", m.random_tuning.geomean_ratio},
                      {"eval_tasks", m.tasks},
                      {"eval_programs", m.programs}};
}

// A gate comparison in a version's metrics (versus_parent): parent = the teacher.
json::object versus_json(const onboarding::PlatformComparison& c) {
  if (!c.teacher || !c.student) return json::object{{"tasks", c.tasks}};
  const onboarding::ModelSummary &t = *c.teacher, &s = *c.student;
  const auto optional = [](const std::optional<double>& v) { return v ? json::value(*v) : json::value(nullptr); };
  return json::object{{"tasks", c.tasks},
                      {"judged_on", c.judged_on},
                      {"parent_top1", t.top1_mean},
                      {"top1", s.top1_mean},
                      {"change", s.top1_mean - t.top1_mean},
                      {"change_se", c.top1_mean_se},
                      {"parent_top1_sum_ratio", t.top1_sum},
                      {"top1_sum_ratio", s.top1_sum},
                      {"sum_change", s.top1_sum - t.top1_sum},
                      {"sum_change_se", c.top1_sum_se},
                      {"parent_tuning_proxy", optional(t.tuning)},
                      {"tuning_proxy", optional(s.tuning)},
                      {"tuning_tasks", c.tuning_tasks},
                      {"tuning_log_change_se", c.tuning_log_se}};
}

}  // namespace

JobWorker::JobWorker(JobWorkerOptions options, registry::JobQueue& jobs, registry::PlatformStore& platforms,
                     registry::UploadStore& uploads, registry::ModelStore& models, prometheus::Registry& metrics)
    : options_(std::move(options)), jobs_(jobs), platforms_(platforms), uploads_(uploads), models_(models),
      metrics_(std::make_unique<Metrics>(metrics)) {}

JobWorker::~JobWorker() { stop(); }

void JobWorker::start() {
  if (auto d = trainer::resolve_device(options_.train_device); d) {
    spdlog::info("training jobs run on {}", trainer::device_name(*d));
  } else {
    spdlog::error("--train-device: {} (every job will fail)", d.status().to_string());
  }
  for (int i = 0; i < options_.threads; ++i) threads_.emplace_back([this, i] { loop(i); });
}

void JobWorker::stop() {
  stopping_ = true;
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void JobWorker::loop(int index) {
  const std::string me = options_.worker_id + "/" + std::to_string(index);
  while (!stopping_) {
    auto job = jobs_.claim(me, options_.lease);
    if (!job) {
      if (job.status().code() != StatusCode::kNotFound) {
        spdlog::warn("worker {}: claim failed: {}", me, job.status().to_string());
      }
      for (auto waited = std::chrono::milliseconds(0); waited < options_.poll_interval && !stopping_;
           waited += std::chrono::milliseconds(50)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      continue;
    }
    job->worker = me;
    run_job(*job);
  }
}

// Heartbeats on their own thread while a job runs: reading, an epoch or an
// evaluation can outlast the lease. `cancel` turns true when the job was
// cancelled, its lease went to another worker, or the worker stops.
class JobWorker::Heartbeat {
 public:
  Heartbeat(registry::JobQueue& jobs, const registry::Job& job, std::chrono::milliseconds lease,
            const std::atomic<bool>& stopping)
      : jobs_(jobs), job_(job), lease_(lease), stopping_(stopping),
        progress_(json::serialize(json::object{{"phase", "reading"}})), thread_([this] { loop(); }) {}
  ~Heartbeat() {
    {
      core::MutexLock lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  void set(const json::object& p) EXCLUDES(mu_) {
    std::string text = json::serialize(p);
    core::MutexLock lock(mu_);
    progress_ = std::move(text);
  }
  // The progress now, not at the next beat (the job shows where training ended).
  void send_now() EXCLUDES(mu_) { (void)jobs_.heartbeat(job_.id, job_.worker, lease_, progress()); }

  std::atomic<bool> cancel{false};

 private:
  // A beat every lease/4 until the destructor says done; the database call
  // runs unlocked so that set() never waits on it.
  void loop() EXCLUDES(mu_) {
    while (!wait_for_beat()) {
      const Status s = jobs_.heartbeat(job_.id, job_.worker, lease_, progress());
      if (s.code() == StatusCode::kCancelled || s.code() == StatusCode::kFailedPrecondition || stopping_) {
        cancel = true;  // cancelled, or the lease went to another worker
      }
    }
  }
  // true when done; false when the next beat is due.
  bool wait_for_beat() EXCLUDES(mu_) {
    const auto due = std::chrono::steady_clock::now() + lease_ / 4;
    core::MutexLock lock(mu_);
    while (!done_) {
      if (!cv_.wait_until(mu_, due)) return done_;
    }
    return true;
  }
  std::string progress() EXCLUDES(mu_) {
    core::MutexLock lock(mu_);
    return progress_;
  }

  registry::JobQueue& jobs_;
  const registry::Job& job_;
  const std::chrono::milliseconds lease_;
  const std::atomic<bool>& stopping_;
  core::Mutex mu_;
  core::CondVar cv_;
  bool done_ GUARDED_BY(mu_) = false;
  std::string progress_ GUARDED_BY(mu_);
  std::thread thread_;  // last: starts once the rest is set
};

// A job's starting point: a version to fine-tune ("init"), or for a distill
// the teacher (production); empty for a fresh model.
struct JobWorker::Start {
  std::optional<std::int64_t> version;
  std::string weights;
  std::vector<std::string> platforms;  // the version's
};

// What a distill learns from besides the platform's measurements; owns what
// `targets` views (held by pointer, so the views stay put).
struct JobWorker::Distill {
  std::string fisher, column;
  std::vector<core::Record> unlabeled, old_bank;
  std::size_t unlabeled_read = 0, old_bank_read = 0;  // as read (kept after the records are freed)
  trainer::DistillTargets targets;
};

// A version that store_version() did not store: the database was away (it
// was stored with the job's finish, or neither, and then the lease lapses and
// the job runs again), the job is no longer ours, it was cancelled meanwhile,
// or it failed.
void JobWorker::settle_unstored(const registry::Job& job, const Status& s) {
  switch (s.code()) {
    case StatusCode::kUnavailable: spdlog::warn("job id={}: storing its version: {}", job.id, s.to_string()); return;
    case StatusCode::kFailedPrecondition:
      spdlog::warn("job id={}: no longer ours, no version stored: {}", job.id, s.to_string());
      return;
    case StatusCode::kCancelled:
      // finish() records a job with a cancel request as cancelled.
      (void)jobs_.finish(job.id, job.worker, registry::JobOutcome::failure(s.message()));
      spdlog::info("job id={}: cancelled before its version was stored", job.id);
      return;
    default: fail_job(job, s);
  }
}

void JobWorker::run_job(const registry::Job& job) {
  const auto started = Clock::now();
  const bool distill = job.kind == registry::JobKind::kDistill;
  spdlog::info("job id={} kind={} platform={} attempt={} worker={}: started", job.id, registry::job_kind_name(job.kind),
               job.platform, job.attempts, job.worker);
  const auto fail = [&](const Status& s) { fail_job(job, s); };
  auto options = api::parse_job_options(job.options_json, job.kind);
  if (!options) return fail(options.status());
  if (auto device = trainer::resolve_device(options_.train_device); device) {
    options->max_records = api::effective_max_records(*options, *device);  // 0: every program (CUDA)
  }
  auto platform = platforms_.get(job.platform);
  if (!platform) return fail(platform.status());
  Heartbeat heartbeat(jobs_, job, options_.lease, stopping_);

  // This platform's measurements, and nothing else (DESIGN §5.3).
  std::unordered_set<std::string> measured_ids;  // what the distill's unlabeled inputs leave out
  auto records =
      read_platform_records(*platform, options->max_records, options->eval_fraction, distill ? &measured_ids : nullptr);
  if (!records) return fail(records.status());
  if (stopping_) return;  // the lease lapses; another worker retries
  auto start = read_start(distill ? std::string("production") : options->init, distill);
  if (!start) return fail(start.status());

  trainer::TrainRequest request = make_request(*options, *platform, *records);
  request.resources.device = options_.train_device;
  request.resources.cancel = &heartbeat.cancel;
  const bool by_adapter = distill && options->method == api::JobOptions::DistillMethod::kAdapter;
  std::unique_ptr<Distill> plan;
  std::string init;  // what a FineTune in `request` views
  if (by_adapter) {
    const trainer::FineTune tune{.auto_schedule = options->auto_schedule,
                                 .adapter = {.rank = options->adapter_rank, .layers = options->adapter_layers}};
    if (Status s = onboarding::start_adapter_distill(start->weights, tune, &init, &request); !s) {
      return fail(s.with_context("production (version " + std::to_string(*start->version) + ")"));
    }
  } else {
    if (!start->weights.empty()) {
      // The version's model of this platform (its adapter folded in, when it keeps one).
      auto own = trainer::platform_checkpoint(start->weights, job.platform);
      if (!own) return fail(own.status().with_context("version " + std::to_string(*start->version)));
      init = std::move(*own);
    }
    trainer::FineTune tune{.init_checkpoint = init, .auto_schedule = options->auto_schedule};
    if (distill) {
      auto p = plan_distill(job, *options, *platform, *start, request, measured_ids, heartbeat);
      if (!p) return fail(p.status());
      plan = std::move(*p);
      request.start = trainer::Distill{.teacher = tune, .targets = plan->targets};
    } else if (!init.empty()) {
      request.start = tune;
    }
  }
  auto trained = train(job, request, options->epochs, heartbeat);
  records->clear();
  records->shrink_to_fit();
  if (plan) plan->unlabeled = plan->old_bank = {};  // targets' views are not read after training
  if (!trained) {
    if (trained.status().code() == StatusCode::kCancelled && stopping_) return;  // retried after the lease
    return fail(trained.status());
  }

  registry::NewVersion v;
  v.parent = start->version;
  v.platforms = onboarding::covered_platforms(distill ? start->platforms : std::vector<std::string>{}, job.platform);
  v.weights = std::move(trained->checkpoint);
  if (!trained->fisher.empty()) v.fisher = std::move(trained->fisher);
  if (by_adapter) {
    if (Status kept = keep_adapter_version(*start, job.platform, trained->adapter, &v); !kept) return fail(kept);
  }
  // No evaluation split (eval_fraction 0, e.g. an active column trained on a
  // few measured programs): no numbers rather than zeros.
  json::object metrics{{job.platform, trained->metrics.tasks > 0 ? json::value(metrics_json(trained->metrics))
                                                                 : json::value(json::object{{"eval_tasks", 0}})}};
  std::optional<onboarding::GateDecision> gate;
  if (distill) {
    heartbeat.set(json::object{{"phase", "evaluating"}, {"platforms", v.platforms.size()}});
    auto decision = judge_distilled(job, v.platforms, *start, v.weights, options->margin, &metrics, heartbeat);
    if (!decision) return;  // cancelled or lost the lease
    gate = *decision;
    v.status = gate->promote ? registry::VersionStatus::kPromoted : registry::VersionStatus::kCandidate;
  }
  v.metrics_json = json::serialize(metrics);
  v.config_json = config_json(job, *options, *trained, *start, plan.get());
  const bool fine_tune_scheduled = options->auto_schedule && !start->weights.empty();
  v.training_summary_json = training_summary_json(job, *trained, fine_tune_scheduled, started);
  if (heartbeat.cancel) return;  // cancelled or lost the lease: no version
  auto version = store_version(job, v, gate, *start);
  if (!version) return settle_unstored(job, version.status());
  metrics_->finished.Add({{"kind", std::string(registry::job_kind_name(job.kind))}, {"outcome", "succeeded"}})
      .Increment();
  spdlog::info("job id={} kind={} platform={}: version {} in {:.1f} s, top1={:.3f}{}", job.id,
               registry::job_kind_name(job.kind), job.platform, *version,
               std::chrono::duration<double>(Clock::now() - started).count(), trained->metrics.top1.mean_ratio,
               gate ? (gate->promote ? ", promoted" : ", kept as a candidate") : "");
}

void JobWorker::fail_job(const registry::Job& job, const Status& s) {
  spdlog::warn("job id={}: failed: {}", job.id, s.to_string());
  metrics_->finished.Add({{"kind", std::string(registry::job_kind_name(job.kind))}, {"outcome", "failed"}}).Increment();
  if (Status f = jobs_.finish(job.id, job.worker, registry::JobOutcome::failure(s.to_string())); !f) {
    spdlog::warn("job id={}: could not record the failure: {}", job.id, f.to_string());
  }
}

Result<JobWorker::Start> JobWorker::read_start(const std::string& name, bool distill) {
  Start s;
  if (name.empty()) return s;
  auto id = models_.resolve(name);
  if (!id) {
    if (distill) {
      return Status::failed_precondition("distill needs a production version to distill into: " +
                                         id.status().message());
    }
    return id.status().with_context("option 'init'");
  }
  auto blob = models_.weights(*id);
  if (!blob) return blob.status();
  auto info = models_.get(*id);
  if (!info) return info.status();
  s.version = *id;
  s.weights = std::move(blob->bytes);
  s.platforms = info->platforms;
  return s;
}

Status JobWorker::keep_adapter_version(const Start& production, const std::string& platform, const std::string& adapter,
                                       registry::NewVersion* v) {
  auto kept = trainer::attach_adapter(production.weights, platform, adapter);
  if (!kept) return kept.status();
  v->weights = std::move(*kept);
  auto fisher = models_.fisher(*production.version);  // the trunk's: production's
  if (fisher) {
    v->fisher = std::move(fisher->bytes);
  } else if (fisher.status().code() != StatusCode::kNotFound) {
    return fisher.status();
  }
  return Status::ok();
}

Result<std::unique_ptr<JobWorker::Distill>> JobWorker::plan_distill(
    const registry::Job& job, const api::JobOptions& o, const registry::PlatformRow& platform, const Start& teacher,
    const trainer::TrainRequest& request, const std::unordered_set<std::string>& measured, Heartbeat& heartbeat) {
  auto adapted = trainer::adapter_platforms(teacher.weights);
  if (!adapted) return adapted.status().with_context("production");
  if (!adapted->empty()) {
    std::string names;
    for (const std::string& a : *adapted) names += (names.empty() ? "" : ", ") + a;
    return Status::failed_precondition("production (version " + std::to_string(*teacher.version) +
                                       ") keeps per-platform adapters (" + names +
                                       "): one distilled student cannot replace its platforms' models; distill "
                                       "with \"method\": \"adapter\"");
  }
  auto d = std::make_unique<Distill>();
  if (auto f = models_.fisher(*teacher.version); f) {
    d->fisher = std::move(f->bytes);
  } else if (f.status().code() != StatusCode::kNotFound) {
    return f.status();
  }
  // The active column: the platform's fine-tuned copy of this teacher (a
  // train job with "init"), or fine-tuned here (Progress).
  if (auto a = models_.get_alias("active." + job.platform); a) {
    if (auto info = models_.get(a->version); info && info->parent == teacher.version) {
      auto blob = models_.weights(a->version);
      if (!blob) return blob.status();
      auto own = trainer::platform_checkpoint(blob->bytes, job.platform);  // an alias moved by hand may keep adapters
      if (!own) return own.status().with_context("active." + job.platform);
      d->column = std::move(*own);
    }
  }
  if (d->column.empty()) {
    heartbeat.set(json::object{{"phase", "active column"}, {"records", request.data.records.size()}});
    const trainer::FineTune from_teacher{.init_checkpoint = teacher.weights, .auto_schedule = o.auto_schedule};
    auto tuned = trainer::train_platform(onboarding::column_request(request, from_teacher, o.column_epochs), nullptr);
    if (!tuned) return tuned.status().with_context("active column");
    d->column = std::move(tuned->checkpoint);
  }
  onboarding::DistillSources sources;
  const std::vector<std::string> old_platforms = onboarding::old_platforms(teacher.platforms, job.platform);
  for (const auto& name : old_platforms) {
    auto old = platforms_.find(name);
    if (!old) return old.status().with_context("teacher platform");
    const auto h = core::descriptor_of(registry::core_platform(*old));
    sources.old_descriptors.emplace_back(h.begin(), h.end());
  }
  trainer::DistillTargets weights;
  weights.label_weight = o.label_weight;
  weights.column_weight = o.column_weight;
  weights.old_weight = o.old_weight;
  weights.ewc_weight = o.ewc_weight;
  weights.temperature = o.temperature;
  weights.unlabeled_ratio = o.unlabeled_ratio;
  weights.max_unlabeled = o.max_unlabeled;
  weights.old_bank_ratio = o.old_bank_ratio;
  weights.max_old_bank = o.max_old_bank;
  if (onboarding::wants_unlabeled(weights)) {
    heartbeat.set(json::object{{"phase", "reading the candidate pool"}, {"records", request.data.records.size()}});
    auto pool = read_unmeasured_candidates(platform, measured, o.max_unlabeled);
    if (!pool) return pool.status();
    d->unlabeled = std::move(*pool);
    d->unlabeled_read = d->unlabeled.size();
  }
  if (onboarding::wants_old_bank(weights, old_platforms.size())) {
    heartbeat.set(json::object{{"phase", "reading the old platforms' bank"}, {"platforms", old_platforms.size()}});
    auto bank = read_old_bank(old_platforms, o.max_old_bank);
    if (!bank) return bank.status();
    d->old_bank = std::move(*bank);
    d->old_bank_read = d->old_bank.size();
  }
  sources.column_checkpoint = d->column;
  sources.teacher_fisher = d->fisher;
  sources.unlabeled = d->unlabeled;
  sources.old_bank = d->old_bank;
  d->targets = onboarding::plan_distillation(weights, std::move(sources));
  return d;
}

Result<trainer::TrainResult> JobWorker::train(const registry::Job& job, const trainer::TrainRequest& request,
                                              int epochs, Heartbeat& heartbeat) {
  const std::size_t records = request.data.records.size();
  heartbeat.set(json::object{{"phase", "training"}, {"records", records}});
  const prometheus::Labels labels{{"platform", api::name_label(job.platform, options_.metrics_names)}};
  metrics_->epoch.Add(labels).Set(0);
  metrics_->epochs.Add(labels).Set(epochs);
  const auto on_epoch = [&](int epoch, int epochs_now, double loss, double val_top1) {
    if (epoch == 1) metrics_->epochs.Add(labels).Set(epochs_now);  // more under min_steps
    json::object p{
        {"phase", "training"}, {"epoch", epoch}, {"epochs", epochs_now}, {"loss", loss}, {"records", records}};
    if (!std::isnan(val_top1)) p["val_top1"] = val_top1;
    heartbeat.set(p);
    metrics_->epoch.Add(labels).Set(epoch);
    metrics_->loss.Add(labels).Set(loss);
    if (!std::isnan(val_top1)) metrics_->val_top1.Add(labels).Set(val_top1);
    return !heartbeat.cancel.load();
  };
  auto trained = trainer::train_platform(request, on_epoch);
  heartbeat.send_now();
  return trained;
}

std::optional<onboarding::GateDecision> JobWorker::judge_distilled(const registry::Job& job,
                                                                   const std::vector<std::string>& covered,
                                                                   const Start& teacher, const std::string& student,
                                                                   double margin, json::object* metrics,
                                                                   Heartbeat& heartbeat) {
  // Every covered platform, the student against its teacher (read for
  // measuring only, after the weights are final): every task of an old
  // platform, the standing split of the new one (onboarding/distill.h).
  std::vector<onboarding::PlatformComparison> compared;
  json::object versus_parent;
  const double eval_fraction = trainer::TrainRequest::default_data_options().eval_fraction;
  for (const auto& name : covered) {
    const bool is_new = name == job.platform &&
                        std::find(teacher.platforms.begin(), teacher.platforms.end(), name) == teacher.platforms.end();
    auto scores = evaluate_platform(name, is_new, student, teacher.weights);
    if (!scores) spdlog::warn("job id={}: platform {} not evaluated: {}", job.id, name, scores.status().to_string());
    compared.push_back(
        onboarding::comparison_of(name, is_new, onboarding::judged_on(is_new), scores ? &*scores : nullptr));
    if (scores && compared.back().student) {
      (*metrics)[name] = metrics_json(scores->student);
      json::object versus = versus_json(compared.back());
      if (!is_new) {
        const auto split = onboarding::standing_split_tasks(*scores, eval_fraction);
        versus["standing_split"] = versus_json(onboarding::paired_comparison(name, false, "standing split", split));
      }
      versus_parent[name] = std::move(versus);
    }
    if (heartbeat.cancel) return std::nullopt;
  }
  (*metrics)["versus_parent"] = std::move(versus_parent);
  return onboarding::promotion_decision(compared, margin);
}

std::string JobWorker::config_json(const registry::Job& job, const api::JobOptions& o,
                                   const trainer::TrainResult& trained, const Start& start, const Distill* d) {
  json::value distill = nullptr;
  if (job.kind == registry::JobKind::kDistill && o.method == api::JobOptions::DistillMethod::kAdapter) {
    distill = json::object{{"method", api::distill_method_name(o.method)},
                           {"adapter_rank", o.adapter_rank},
                           {"adapter_layers", trainer::adapter_layers_name(o.adapter_layers)},
                           {"adapter_parameters", trained.adapter_parameters},
                           {"margin", o.margin}};
  } else if (d) {
    const trainer::DistillTargets& t = d->targets;
    distill = json::object{{"method", api::distill_method_name(o.method)},
                           {"label_weight", t.label_weight},
                           {"column_weight", o.column_weight},  // per old platform, as asked
                           {"column_term_weight", t.column_weight},
                           {"old_weight", t.old_weight},
                           {"ewc_weight", t.ewc_weight},
                           {"temperature", t.temperature},
                           {"unlabeled_ratio", t.unlabeled_ratio},
                           {"unlabeled_read", d->unlabeled_read},
                           {"unlabeled_programs", trained.unlabeled_programs},
                           {"old_bank_ratio", t.old_bank_ratio},
                           {"old_bank_read", d->old_bank_read},
                           {"old_bank_programs", trained.old_bank_programs},
                           {"ewc", !d->fisher.empty()},
                           {"old_platforms", t.old_descriptors.size()},
                           {"margin", o.margin}};
  }
  return json::serialize(json::object{{"kind", registry::job_kind_name(job.kind)},
                                      {"model", o.model},
                                      {"model_config", trainer::config_to_text(trained.config)},
                                      {"epochs", o.epochs},
                                      {"learning_rate", o.learning_rate},
                                      {"min_steps", o.min_steps},
                                      {"validation_fraction", o.validation_fraction},
                                      {"validation_by", o.validation_by_tasks ? "tasks" : "programs"},
                                      {"patience", o.patience},
                                      {"refit", o.refit},
                                      {"auto_schedule", o.auto_schedule},
                                      {"max_records", o.max_records},
                                      {"eval_fraction", o.eval_fraction},
                                      {"seed", o.seed},
                                      {"init", start.version ? json::value(*start.version) : json::value(nullptr)},
                                      {"distill", std::move(distill)}});
}

std::string JobWorker::training_summary_json(const registry::Job& job, const trainer::TrainResult& trained,
                                             bool fine_tune_scheduled, Clock::time_point started) {
  json::array losses;
  for (double l : trained.epoch_losses) losses.push_back(l);
  return json::serialize(json::object{
      {"job", job.id},
      {"records_read", static_cast<std::int64_t>(trained.data.records)},
      {"epochs_planned", trained.epochs_planned},
      {"epochs_done", trained.epochs_done},
      {"best_epoch", trained.best_epoch},
      {"refitted", trained.refitted},
      {"validation_top1",
       trained.best_epoch > 0 ? json::value(trained.validation.top1.mean_ratio) : json::value(nullptr)},
      {"schedule", !fine_tune_scheduled
                       ? json::value(nullptr)
                       : json::value(json::object{{"long", trained.long_schedule_used},
                                                  {"zero_shot_pairwise", trained.zero_shot.pairwise_accuracy},
                                                  {"zero_shot_top1", trained.zero_shot.top1.mean_ratio}})},
      {"steps", trained.steps},
      {"epoch_losses", std::move(losses)},
      {"budget_exhausted", trained.budget_exhausted},
      {"parameters", trained.num_parameters},
      {"wall_s", std::chrono::duration<double>(Clock::now() - started).count()}});
}

Result<std::int64_t> JobWorker::store_version(const registry::Job& job, const registry::NewVersion& v,
                                              const std::optional<onboarding::GateDecision>& gate, const Start& start) {
  // The version, its status and aliases and the job's finish are one
  // transaction (issue 45 #9): a crash never leaves a version whose job is
  // then run again.
  registry::CreateVersionOptions create;
  create.make_production_if_unset = true;
  create.actor = "job " + std::to_string(job.id);
  create.job = registry::JobOwner{job.id, job.worker};
  if (gate) {
    json::array reasons;
    for (const auto& r : gate->reasons) reasons.push_back(json::string(r));
    create.status_reasons_json = json::serialize(json::object{{"promote", gate->promote}, {"reasons", reasons}});
    if (gate->promote) {
      create.aliases.push_back({"production", "promotion gate (job " + std::to_string(job.id) + ")",
                                "distilled " + job.platform + " into version " + std::to_string(*start.version)});
    }
  } else {
    // The lineage's first version (when it becomes production): production
    // by rule, not by the gate.
    create.first_version_reasons_json = R"({"reasons": ["the first version of the lineage becomes production"]})";
    if (start.version) {
      // The platform's active column: what its next sample requests score with.
      create.aliases.push_back({"active." + job.platform, "job " + std::to_string(job.id),
                                "active column fine-tuned from version " + std::to_string(*start.version)});
    }
  }
  auto version = models_.create_version(v, create);
  if (!version) return version.status();
  return version->version;
}

Result<std::vector<core::Record>> JobWorker::read_platform_records(const registry::PlatformRow& platform,
                                                                   std::int64_t max_records, double eval_fraction,
                                                                   std::unordered_set<std::string>* program_ids) {
  // Records take ~5-8 KB each in memory, so when there are many more than
  // the job may train on, keep a deterministic share (by program id).
  const std::int64_t stored = platform.counts.measurements + platform.counts.failed;
  const double keep =
      stored > 0 && max_records > 0
          ? std::min(1.0, 1.25 * static_cast<double>(max_records) / (1.0 - eval_fraction) / static_cast<double>(stored))
          : 1.0;
  std::vector<core::Record> records;
  core::RecordParser parser;
  core::Record record;
  Status read =
      uploads_.for_each_record(platform.id, registry::UploadKind::kMeasurements, [&](const registry::StoredRecord& r) {
        if (!in_share(r.program_id, keep)) return !stopping_.load();
        if (!parser.parse(r.record, &record).is_ok()) return !stopping_.load();
        records.push_back(record);
        if (program_ids != nullptr) program_ids->insert(r.program_id);
        return !stopping_.load();
      });
  if (!read) return read;
  return records;
}

Result<std::vector<core::Record>> JobWorker::read_unmeasured_candidates(const registry::PlatformRow& platform,
                                                                        const std::unordered_set<std::string>& measured,
                                                                        std::int64_t max_records) {
  // As for measurements: a deterministic share by program id when the pool
  // is far larger than what the job keeps (the trainer caps it further).
  const std::int64_t pool = platform.counts.candidates;
  const double keep = pool > 0 && max_records > 0
                          ? std::min(1.0, 1.25 * static_cast<double>(max_records) / static_cast<double>(pool))
                          : 1.0;
  std::vector<core::Record> records;
  core::RecordParser parser;
  core::Record record;
  Status read =
      uploads_.for_each_record(platform.id, registry::UploadKind::kCandidates, [&](const registry::StoredRecord& r) {
        if (!in_share(r.program_id, keep)) return !stopping_.load();
        if (measured.count(r.program_id)) return !stopping_.load();
        if (!parser.parse(r.record, &record).is_ok()) return !stopping_.load();
        records.push_back(record);
        return !stopping_.load();
      });
  if (!read) return read.with_context("reading the candidate pool");
  return records;
}

Result<std::vector<core::Record>> JobWorker::read_old_bank(const std::vector<std::string>& old_platforms,
                                                           std::int64_t max_records) {
  std::vector<core::Record> bank;
  if (old_platforms.empty()) return bank;
  const double per_platform = static_cast<double>(max_records) / static_cast<double>(old_platforms.size());
  core::RecordParser parser;
  core::Record record;
  for (const std::string& name : old_platforms) {
    auto old = platforms_.get(name);
    if (!old) return old.status().with_context("old platforms' bank");
    const std::int64_t stored = old->counts.measurements + old->counts.failed + old->counts.candidates;
    const double keep = stored > 0 ? std::min(1.0, 1.25 * per_platform / static_cast<double>(stored)) : 1.0;
    std::unordered_set<std::string> seen;  // a program measured and also a candidate: once
    for (const registry::UploadKind kind : {registry::UploadKind::kMeasurements, registry::UploadKind::kCandidates}) {
      Status read = uploads_.for_each_record(old->id, kind, [&](const registry::StoredRecord& r) {
        if (!in_share(r.program_id, keep) || !seen.insert(r.program_id).second) return !stopping_.load();
        if (!parser.parse(r.record, &record).is_ok()) return !stopping_.load();
        if (kind == registry::UploadKind::kMeasurements && core::measurement_failed(record.error_no, record.costs)) {
          return !stopping_.load();  // a program that did not build or run is no input
        }
        record.costs.clear();  // the program only: no old measurement is trained on
        record.all_cost = 0;
        bank.push_back(record);
        return !stopping_.load();
      });
      if (!read) return read.with_context("reading the old platforms' bank");
    }
  }
  return bank;
}

Result<std::vector<core::Record>> JobWorker::read_judged_records(const registry::PlatformRow& platform,
                                                                 bool standing_split_only, std::int64_t per_task) {
  onboarding::JudgedRecords judged(standing_split_only, per_task);
  core::RecordParser parser;
  core::Record record;
  Status read =
      uploads_.for_each_record(platform.id, registry::UploadKind::kMeasurements, [&](const registry::StoredRecord& r) {
        if (parser.parse(r.record, &record).is_ok()) judged.add(r.program_id, record);
        return !stopping_.load();
      });
  if (!read) return read;
  return judged.take();
}

Result<onboarding::PairedScores> JobWorker::evaluate_platform(const std::string& name, bool is_new,
                                                              const std::string& student, const std::string& teacher) {
  auto platform = platforms_.get(name);
  if (!platform) return platform.status();
  auto records = read_judged_records(*platform, is_new, onboarding::kJudgedProgramsPerTask);
  if (!records) return records.status();
  const trainer::Platform p = registry::core_platform(*platform);
  // Each version's model of this platform (its adapter folded in, if any).
  auto student_own = trainer::platform_checkpoint(student, name);
  if (!student_own) return student_own.status();
  auto teacher_own = trainer::platform_checkpoint(teacher, name);
  if (!teacher_own) return teacher_own.status();
  return onboarding::evaluate_against_teacher(*student_own, *teacher_own, *records, p, options_.torch_threads);
}

}  // namespace tcl::daemon
