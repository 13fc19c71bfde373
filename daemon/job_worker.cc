#include "daemon/job_worker.h"

#include <spdlog/spdlog.h>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <unordered_set>

#include "core/features.h"
#include "core/program_id.h"
#include "core/record.h"
#include "core/task_split.h"
#include "api/job_options.h"
#include "daemon/promotion_gate.h"
#include "trainer/train_job.h"

namespace tcl::daemon {
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

struct JobWorker::Metrics {
  explicit Metrics(prometheus::Registry& r)
      : epoch(prometheus::BuildGauge()
                  .Name("tcld_training_epoch")
                  .Help("Epochs finished by the job running for a platform.")
                  .Register(r)),
        loss(prometheus::BuildGauge()
                 .Name("tcld_training_loss")
                 .Help("Mean LambdaRank loss of the last finished epoch, by platform.")
                 .Register(r)),
        val_top1(prometheus::BuildGauge()
                     .Name("tcld_training_validation_top1")
                     .Help("Top-1 (mean over held-out tasks) after the last epoch, by platform.")
                     .Register(r)),
        epochs(prometheus::BuildGauge()
                   .Name("tcld_training_epochs")
                   .Help("Epochs asked for by the job running for a platform (progress = epoch / epochs).")
                   .Register(r)),
        finished(prometheus::BuildCounter()
                     .Name("tcld_training_jobs_finished_total")
                     .Help("Jobs this process finished, by kind and outcome (succeeded, failed).")
                     .Register(r)) {}
  prometheus::Family<prometheus::Gauge>& epoch;
  prometheus::Family<prometheus::Gauge>& loss;
  prometheus::Family<prometheus::Gauge>& val_top1;
  prometheus::Family<prometheus::Gauge>& epochs;
  prometheus::Family<prometheus::Counter>& finished;
};

namespace {

trainer::TrainRequest make_request(const api::JobOptions& o, const registry::Platform& platform,
                                   const std::vector<core::Record>& records) {
  trainer::TrainRequest request;
  request.records = records;
  request.platform.target = platform.target;
  request.platform.hardware = registry::hardware_params_of(platform);
  request.data.eval_fraction = o.eval_fraction;
  request.data.max_records = o.max_records;
  request.model.kind = o.model == "attention" ? trainer::ModelKind::kAttention
                       : o.model == "mlp"     ? trainer::ModelKind::kMlp
                                              : trainer::ModelKind::kMamba;
  request.epochs = o.epochs;
  request.min_steps = o.min_steps;
  request.data.validation_fraction = o.validation_fraction;
  if (o.validation_by_tasks) request.data.validation_split = trainer::ValidationSplit::kTasks;
  request.patience = o.patience;
  request.refit = o.refit;
  request.auto_schedule = o.auto_schedule;
  request.seed = o.seed;
  request.time_budget_s = o.time_budget_s;
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
                      {"eval_tasks", m.tasks},
                      {"eval_programs", m.programs}};
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

void JobWorker::run_job(const registry::Job& job) {
  const std::string& me = job.worker;
  const auto started = Clock::now();
  const bool distill = job.kind == registry::JobKind::kDistill;
  spdlog::info("job id={} kind={} platform={} attempt={} worker={}: started", job.id,
               registry::job_kind_name(job.kind), job.platform, job.attempts, me);
  const std::string kind(registry::job_kind_name(job.kind));
  auto fail = [&](const Status& s) {
    spdlog::warn("job id={}: failed: {}", job.id, s.to_string());
    metrics_->finished.Add({{"kind", kind}, {"outcome", "failed"}}).Increment();
    if (Status f = jobs_.finish(job.id, me, registry::JobOutcome::failure(s.to_string())); !f) {
      spdlog::warn("job id={}: could not record the failure: {}", job.id, f.to_string());
    }
  };
  auto options = api::parse_job_options(job.options_json, job.kind);
  if (!options) return fail(options.status());
  auto platform = platforms_.get(job.platform);
  if (!platform) return fail(platform.status());

  // Heartbeats on their own thread from here on: reading, an epoch or an
  // evaluation can outlast the lease.
  std::atomic<bool> cancel{false};
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::string progress = json::serialize(json::object{{"phase", "reading"}});
  std::thread heartbeat([&] {
    std::unique_lock lock(mu);
    while (!cv.wait_for(lock, options_.lease / 4, [&] { return done; })) {
      const std::string p = progress;
      lock.unlock();
      const Status s = jobs_.heartbeat(job.id, me, options_.lease, p);
      lock.lock();
      if (s.code() == StatusCode::kCancelled || s.code() == StatusCode::kFailedPrecondition || stopping_) {
        cancel = true;  // cancelled, or the lease went to another worker
      }
    }
  });
  const auto set_progress = [&](json::object p) {
    std::lock_guard lock(mu);
    progress = json::serialize(p);
  };
  struct StopHeartbeat {
    std::mutex& mu;
    std::condition_variable& cv;
    bool& done;
    std::thread& t;
    ~StopHeartbeat() {
      {
        std::lock_guard lock(mu);
        done = true;
      }
      cv.notify_all();
      t.join();
    }
  } stop_heartbeat{mu, cv, done, heartbeat};

  // This platform's measurements, and nothing else (DESIGN §5.3).
  std::unordered_set<std::string> measured_ids;  // what the distill's unlabeled inputs leave out
  auto records = read_platform_records(*platform, options->max_records, options->eval_fraction, false,
                                       distill ? &measured_ids : nullptr);
  if (!records) return fail(records.status());
  if (stopping_) return;  // the lease lapses; another worker retries

  // The starting point: a version to fine-tune ("init"), or for a distill
  // the teacher (production), its Fisher and the platform's active column.
  std::optional<std::int64_t> init_version;
  std::string init_weights, teacher_fisher, column_weights;
  std::vector<std::string> teacher_platforms;
  const std::string init_name = distill ? std::string("production") : options->init;
  if (!init_name.empty()) {
    auto id = models_.resolve(init_name);
    if (!id) {
      if (distill) return fail(Status::failed_precondition("distill needs a production version to distill into: " + id.status().message()));
      return fail(id.status().with_context("option 'init'"));
    }
    auto blob = models_.weights(*id);
    if (!blob) return fail(blob.status());
    init_version = *id;
    init_weights = std::move(blob->bytes);
    auto info = models_.get(*id);
    if (!info) return fail(info.status());
    teacher_platforms = info->platforms;
  }
  trainer::DistillTargets targets;
  std::vector<core::Record> unlabeled;  // the unmeasured pool (targets.unlabeled views it)
  if (distill) {
    if (auto f = models_.fisher(*init_version); f) {
      teacher_fisher = std::move(f->bytes);
    } else if (f.status().code() != StatusCode::kNotFound) {
      return fail(f.status());
    }
    // The active column: the platform's fine-tuned copy of this teacher
    // (a train job with "init"), or fine-tuned here (Progress).
    if (auto a = models_.get_alias("active." + job.platform); a) {
      if (auto info = models_.get(a->version); info && info->parent == init_version) {
        auto blob = models_.weights(a->version);
        if (!blob) return fail(blob.status());
        column_weights = std::move(blob->bytes);
      }
    }
    if (column_weights.empty()) {
      set_progress(json::object{{"phase", "active column"}, {"records", records->size()}});
      trainer::TrainRequest column = make_request(*options, *platform, *records);
      column.init_checkpoint = init_weights;
      column.epochs = options->column_epochs;
      column.compute_fisher = false;
      column.device = options_.train_device;
      column.eval_each_epoch = false;
      column.cancel = &cancel;
      auto tuned = trainer::train_platform(column, nullptr);
      if (!tuned) return fail(tuned.status().with_context("active column"));
      column_weights = std::move(tuned->checkpoint);
    }
    for (const auto& name : teacher_platforms) {
      if (name == job.platform) continue;
      auto old = platforms_.find(name);
      if (!old) return fail(old.status().with_context("teacher platform"));
      const auto h = core::descriptor_of(registry::core_platform(*old));
      targets.old_descriptors.emplace_back(h.begin(), h.end());
    }
    targets.teacher_fisher = teacher_fisher;
    targets.column_checkpoint = column_weights;
    targets.label_weight = options->label_weight;
    targets.column_weight = options->column_weight;
    targets.old_weight = options->old_weight;
    targets.ewc_weight = options->ewc_weight;
    targets.temperature = options->temperature;
    targets.unlabeled_ratio = options->unlabeled_ratio;
    targets.max_unlabeled = options->max_unlabeled;
    if (options->unlabeled_ratio > 0 && options->max_unlabeled > 0) {
      set_progress(json::object{{"phase", "reading the candidate pool"}, {"records", records->size()}});
      auto pool = read_unmeasured_candidates(*platform, measured_ids, options->max_unlabeled);
      if (!pool) return fail(pool.status());
      unlabeled = std::move(*pool);
      targets.unlabeled = unlabeled;
    }
  }

  trainer::TrainRequest request = make_request(*options, *platform, *records);
  request.init_checkpoint = init_weights;
  request.device = options_.train_device;
  const bool fine_tune_scheduled = request.auto_schedule && !init_weights.empty();
  if (distill) request.distill = &targets;
  request.cancel = &cancel;
  set_progress(json::object{{"phase", "training"}, {"records", records->size()}});
  metrics_->epoch.Add({{"platform", job.platform}}).Set(0);
  metrics_->epochs.Add({{"platform", job.platform}}).Set(options->epochs);
  const auto on_epoch = [&](int epoch, int epochs, double loss, double val_top1) {
    if (epoch == 1) metrics_->epochs.Add({{"platform", job.platform}}).Set(epochs);  // more under min_steps
    json::object p{{"phase", "training"}, {"epoch", epoch}, {"epochs", epochs}, {"loss", loss},
                   {"records", records->size()}};
    if (!std::isnan(val_top1)) p["val_top1"] = val_top1;
    set_progress(p);
    const prometheus::Labels labels{{"platform", job.platform}};
    metrics_->epoch.Add(labels).Set(epoch);
    metrics_->loss.Add(labels).Set(loss);
    if (!std::isnan(val_top1)) metrics_->val_top1.Add(labels).Set(val_top1);
    return !cancel.load();
  };
  auto trained = trainer::train_platform(request, on_epoch);
  {
    // The last epoch's progress now, not at the next heartbeat: the job shows where training ended.
    std::string last;
    {
      std::lock_guard lock(mu);
      last = progress;
    }
    (void)jobs_.heartbeat(job.id, me, options_.lease, last);
  }
  records->clear();
  records->shrink_to_fit();
  const std::size_t unlabeled_read = unlabeled.size();
  unlabeled = {};  // targets.unlabeled is not read after training
  if (!trained) {
    if (trained.status().code() == StatusCode::kCancelled && stopping_) return;  // retried after the lease
    return fail(trained.status());
  }

  registry::NewVersion v;
  v.parent = init_version;
  v.platforms = distill ? teacher_platforms : std::vector<std::string>{};
  if (std::find(v.platforms.begin(), v.platforms.end(), job.platform) == v.platforms.end()) {
    v.platforms.push_back(job.platform);
  }
  v.weights = std::move(trained->checkpoint);
  if (!trained->fisher.empty()) v.fisher = std::move(trained->fisher);
  // No evaluation split (eval_fraction 0, e.g. an active column trained on a
  // few measured programs): no numbers rather than zeros.
  json::object metrics{{job.platform, trained->metrics.tasks > 0 ? json::value(metrics_json(trained->metrics))
                                                                 : json::value(json::object{{"eval_tasks", 0}})}};
  std::optional<GateDecision> gate;
  if (distill) {
    // Every covered platform on its evaluation split, the student against
    // its teacher (read for measuring only, after the weights are final).
    set_progress(json::object{{"phase", "evaluating"}, {"platforms", v.platforms.size()}});
    std::vector<PlatformComparison> compared;
    json::object versus_parent;
    for (const auto& name : v.platforms) {
      PlatformComparison c{name, name == job.platform && std::find(teacher_platforms.begin(), teacher_platforms.end(),
                                                                   name) == teacher_platforms.end(),
                           std::nullopt, std::nullopt};
      auto evaluated = evaluate_platform(name, v.weights, init_weights);
      if (evaluated) {
        metrics[name] = metrics_json(evaluated->student);
        c.teacher_top1 = evaluated->teacher.top1.mean_ratio;
        c.student_top1 = evaluated->student.top1.mean_ratio;
        versus_parent[name] = json::object{{"parent_top1", *c.teacher_top1},
                                           {"top1", *c.student_top1},
                                           {"change", *c.student_top1 - *c.teacher_top1}};
      } else {
        spdlog::warn("job id={}: platform {} not evaluated: {}", job.id, name, evaluated.status().to_string());
      }
      compared.push_back(std::move(c));
      if (cancel) return;
    }
    metrics["versus_parent"] = std::move(versus_parent);
    gate = promotion_decision(compared, options->margin);
    v.status = gate->promote ? registry::VersionStatus::kPromoted : registry::VersionStatus::kCandidate;
  }
  v.metrics_json = json::serialize(metrics);
  v.config_json = json::serialize(json::object{
      {"kind", registry::job_kind_name(job.kind)},
      {"model", options->model},
      {"model_config", trainer::config_to_text(trained->config)},
      {"epochs", options->epochs},
      {"min_steps", options->min_steps},
      {"validation_fraction", options->validation_fraction},
      {"validation_by", options->validation_by_tasks ? "tasks" : "programs"},
      {"patience", options->patience},
      {"refit", options->refit},
      {"auto_schedule", options->auto_schedule},
      {"max_records", options->max_records},
      {"eval_fraction", options->eval_fraction},
      {"seed", options->seed},
      {"init", init_version ? json::value(*init_version) : json::value(nullptr)},
      {"distill", distill ? json::value(json::object{{"label_weight", targets.label_weight},
                                                     {"column_weight", targets.column_weight},
                                                     {"old_weight", targets.old_weight},
                                                     {"ewc_weight", targets.ewc_weight},
                                                     {"temperature", targets.temperature},
                                                     {"unlabeled_ratio", targets.unlabeled_ratio},
                                                     {"unlabeled_read", unlabeled_read},
                                                     {"unlabeled_programs", trained->unlabeled_programs},
                                                     {"ewc", !teacher_fisher.empty()},
                                                     {"old_platforms", targets.old_descriptors.size()},
                                                     {"margin", options->margin}})
                          : json::value(nullptr)}});
  json::array losses;
  for (double l : trained->epoch_losses) losses.push_back(l);
  v.training_summary_json = json::serialize(json::object{
      {"job", job.id},
      {"records_read", static_cast<std::int64_t>(trained->data.records)},
      {"epochs_planned", trained->epochs_planned},
      {"epochs_done", trained->epochs_done},
      {"best_epoch", trained->best_epoch},
      {"refitted", trained->refitted},
      {"validation_top1", trained->best_epoch > 0 ? json::value(trained->validation.top1.mean_ratio) : json::value(nullptr)},
      {"schedule", !fine_tune_scheduled ? json::value(nullptr)
                   : json::value(json::object{{"long", trained->long_schedule_used},
                                              {"zero_shot_pairwise", trained->zero_shot.pairwise_accuracy},
                                              {"zero_shot_top1", trained->zero_shot.top1.mean_ratio}})},
      {"steps", trained->steps},
      {"epoch_losses", std::move(losses)},
      {"budget_exhausted", trained->budget_exhausted},
      {"parameters", trained->num_parameters},
      {"wall_s", std::chrono::duration<double>(Clock::now() - started).count()}});
  if (cancel) return;  // cancelled or lost the lease: no version
  registry::CreateVersionOptions create;
  create.make_production_if_unset = true;
  create.actor = "job " + std::to_string(job.id);
  auto version = models_.create_version(v, create);
  if (!version) return fail(version.status());
  if (gate) {
    json::array reasons;
    for (const auto& r : gate->reasons) reasons.push_back(json::string(r));
    (void)models_.set_status(version->version, v.status,
                             json::serialize(json::object{{"promote", gate->promote}, {"reasons", reasons}}));
    if (gate->promote) {
      auto moved = models_.set_alias("production", version->version, "promotion gate (job " + std::to_string(job.id) + ")",
                                     "distilled " + job.platform + " into version " + std::to_string(*init_version));
      if (!moved) return fail(moved.status());
    }
  } else if (std::find(version->aliases.begin(), version->aliases.end(), "production") != version->aliases.end()) {
    // The lineage's first version: production by rule, not by the gate.
    (void)models_.set_status(version->version, registry::VersionStatus::kPromoted,
                             R"({"reasons": ["the first version of the lineage becomes production"]})");
  } else if (init_version) {
    // The platform's active column: what its next sample requests score with.
    auto moved = models_.set_alias("active." + job.platform, version->version, "job " + std::to_string(job.id),
                                   "active column fine-tuned from version " + std::to_string(*init_version));
    if (!moved) return fail(moved.status());
  }
  if (Status f = jobs_.finish(job.id, me, registry::JobOutcome::success(version->version)); !f) {
    spdlog::warn("job id={}: finished as version {} but could not record it: {}", job.id, version->version,
                 f.to_string());
    return;
  }
  metrics_->finished.Add({{"kind", kind}, {"outcome", "succeeded"}}).Increment();
  spdlog::info("job id={} kind={} platform={}: version {} in {:.1f} s, top1={:.3f}{}", job.id,
               registry::job_kind_name(job.kind), job.platform, version->version,
               std::chrono::duration<double>(Clock::now() - started).count(), trained->metrics.top1.mean_ratio,
               gate ? (gate->promote ? ", promoted" : ", kept as a candidate") : "");
}

Result<std::vector<core::Record>> JobWorker::read_platform_records(const registry::Platform& platform,
                                                                   std::int64_t max_records, double eval_fraction,
                                                                   bool eval_split_only,
                                                                   std::unordered_set<std::string>* program_ids) {
  // Records take ~5-8 KB each in memory, so when there are many more than
  // the job may train on, keep a deterministic share (by program id).
  const std::int64_t stored = platform.counts.measurements + platform.counts.failed;
  const double keep = stored > 0 && max_records > 0
                          ? std::min(1.0, 1.25 * static_cast<double>(max_records) / (1.0 - eval_fraction) /
                                              static_cast<double>(stored))
                          : 1.0;
  std::vector<core::Record> records;
  core::RecordParser parser;
  core::Record record;
  Status read = uploads_.for_each_record(platform.id, registry::UploadKind::kMeasurements,
                                         [&](const registry::StoredRecord& r) {
                                           if (!in_share(r.program_id, keep)) return !stopping_.load();
                                           if (!parser.parse(r.record, &record).is_ok()) return !stopping_.load();
                                           if (eval_split_only && !core::in_holdout(core::canonical_workload_key(record.workload_key), eval_fraction, 0)) {
                                             return !stopping_.load();
                                           }
                                           records.push_back(record);
                                           if (program_ids != nullptr) program_ids->insert(r.program_id);
                                           return !stopping_.load();
                                         });
  if (!read) return read;
  return records;
}

Result<std::vector<core::Record>> JobWorker::read_unmeasured_candidates(const registry::Platform& platform,
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
  Status read = uploads_.for_each_record(platform.id, registry::UploadKind::kCandidates,
                                         [&](const registry::StoredRecord& r) {
                                           if (!in_share(r.program_id, keep)) return !stopping_.load();
                                           if (measured.count(r.program_id)) return !stopping_.load();
                                           if (!parser.parse(r.record, &record).is_ok()) return !stopping_.load();
                                           records.push_back(record);
                                           return !stopping_.load();
                                         });
  if (!read) return read.with_context("reading the candidate pool");
  return records;
}

Result<JobWorker::Evaluated> JobWorker::evaluate_platform(const std::string& name, const std::string& student,
                                                          const std::string& teacher) {
  auto platform = platforms_.get(name);
  if (!platform) return platform.status();
  const trainer::DatasetOptions split = trainer::TrainRequest::default_data_options();
  auto records = read_platform_records(*platform, 0, split.eval_fraction, /*eval_split_only=*/true);
  if (!records) return records.status();
  const trainer::Platform p = registry::core_platform(*platform);
  Evaluated out;
  auto s = trainer::evaluate_checkpoint(student, *records, p, split, options_.torch_threads);
  if (!s) return s.status();
  auto t = trainer::evaluate_checkpoint(teacher, *records, p, split, options_.torch_threads);
  if (!t) return t.status();
  out.student = *s;
  out.teacher = *t;
  return out;
}

}  // namespace tcl::daemon
