#include "daemon/job_worker.h"

#include <spdlog/spdlog.h>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include <boost/json.hpp>

#include <chrono>
#include <cmath>
#include <optional>
#include <string_view>
#include <thread>

#include "core/mutex.h"
#include "api/metrics.h"
#include "onboarding/job_options.h"
#include "onboarding/jobs.h"
#include "onboarding/registry_source.h"

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
  // The last progress with its phase replaced by `phase` and the previous
  // phase's count (done, total, unit, platform) dropped; the rest (the last
  // epoch's numbers) stays.
  void set_phase(std::string_view phase) EXCLUDES(mu_) {
    boost::system::error_code ec;
    json::value last = json::parse(progress(), ec);
    json::object p = !ec && last.is_object() ? std::move(last.as_object()) : json::object{};
    for (const char* key : {"done", "total", "unit", "platform"}) p.erase(key);
    p["phase"] = phase;
    set(p);
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

// The workflow's reports: progress by heartbeat, the training gauges, the log.
class JobWorker::Observer : public onboarding::JobObserver {
 public:
  Observer(JobWorker& worker, const registry::Job& job, Heartbeat& heartbeat)
      : metrics_(*worker.metrics_), job_(job),
        heartbeat_(heartbeat), labels_{{"platform", api::name_label(job.platform, worker.options_.metrics_names)}} {}

  void progress(const json::object& p) override { heartbeat_.set(p); }
  void training(int epochs) override {
    metrics_.epoch.Add(labels_).Set(0);
    metrics_.epochs.Add(labels_).Set(epochs);
  }
  void epoch(int epoch, int epochs, double loss, double val_top1) override {
    if (epoch == 1) metrics_.epochs.Add(labels_).Set(epochs);  // more under min_steps
    metrics_.epoch.Add(labels_).Set(epoch);
    metrics_.loss.Add(labels_).Set(loss);
    if (!std::isnan(val_top1)) metrics_.val_top1.Add(labels_).Set(val_top1);
  }
  void trained() override { heartbeat_.send_now(); }
  void warning(const std::string& message) override { spdlog::warn("job id={}: {}", job_.id, message); }

 private:
  Metrics& metrics_;
  const registry::Job& job_;
  Heartbeat& heartbeat_;
  const prometheus::Labels labels_;
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
  spdlog::info("job id={} kind={} platform={} attempt={} worker={}: started", job.id, registry::job_kind_name(job.kind),
               job.platform, job.attempts, job.worker);
  auto options = onboarding::parse_job_options(job.options_json, job.kind);
  if (!options) return fail_job(job, options.status());
  Heartbeat heartbeat(jobs_, job, options_.lease, stopping_);
  Observer observer(*this, job, heartbeat);
  onboarding::RegistrySource source(platforms_, uploads_, models_, stopping_);
  const onboarding::JobRun run{.id = job.id,
                               .kind = job.kind,
                               .platform = job.platform,
                               .train_device = options_.train_device,
                               .torch_threads = options_.torch_threads,
                               .started = started,
                               .cancel = &heartbeat.cancel,
                               .stopping = &stopping_};
  auto made = job.kind == registry::JobKind::kDistill ? onboarding::run_distill(run, *options, source, observer)
                                                      : onboarding::run_train(run, *options, source, observer);
  if (!made) return fail_job(job, made.status());
  if (!*made) return;  // cancelled, the lease lost or stopping: no version (a lapsed lease is retried)
  const onboarding::JobVersion& v = **made;
  heartbeat.set_phase("storing");  // the version's weights, Fisher and metrics go to the database
  heartbeat.send_now();
  auto version = store_version(job, v);
  if (!version) return settle_unstored(job, version.status());
  metrics_->finished.Add({{"kind", std::string(registry::job_kind_name(job.kind))}, {"outcome", "succeeded"}})
      .Increment();
  spdlog::info("job id={} kind={} platform={}: version {} in {:.1f} s, top1={:.3f}{}", job.id,
               registry::job_kind_name(job.kind), job.platform, *version,
               std::chrono::duration<double>(Clock::now() - started).count(), v.top1,
               v.gate ? (v.gate->promote ? ", promoted" : ", kept as a candidate") : "");
}

void JobWorker::fail_job(const registry::Job& job, const Status& s) {
  spdlog::warn("job id={}: failed: {}", job.id, s.to_string());
  metrics_->finished.Add({{"kind", std::string(registry::job_kind_name(job.kind))}, {"outcome", "failed"}}).Increment();
  if (Status f = jobs_.finish(job.id, job.worker, registry::JobOutcome::failure(s.to_string())); !f) {
    spdlog::warn("job id={}: could not record the failure: {}", job.id, f.to_string());
  }
}

Result<std::int64_t> JobWorker::store_version(const registry::Job& job, const onboarding::JobVersion& made) {
  const std::optional<onboarding::GateDecision>& gate = made.gate;
  const std::optional<std::int64_t>& parent = made.version.parent;
  // The version, its status and aliases and the job's finish are one
  // transaction (issue 45 #9): a crash never leaves a version whose job is
  // then run again.
  registry::CreateVersionOptions create;
  create.make_production_if_unset = true;
  create.actor = "job " + std::to_string(job.id);
  create.job = registry::JobOwner{job.id, job.worker};
  if (gate) {
    json::array reasons, blocking;
    for (const auto& r : gate->reasons) reasons.push_back(json::string(r));
    for (const auto& b : gate->blocking) blocking.push_back(json::string(b));
    create.status_reasons_json =
        json::serialize(json::object{{"promote", gate->promote}, {"reasons", reasons}, {"blocking", blocking}});
    if (gate->promote) {
      create.aliases.push_back({"production", "promotion gate (job " + std::to_string(job.id) + ")",
                                "distilled " + job.platform + " into version " + std::to_string(*parent)});
    }
  } else {
    // The lineage's first version (when it becomes production): production
    // by rule, not by the gate.
    create.first_version_reasons_json = R"({"reasons": ["the first version of the lineage becomes production"]})";
    if (parent) {
      // The platform's active column: what its next sample requests score with.
      create.aliases.push_back({"active." + job.platform, "job " + std::to_string(job.id),
                                "active column fine-tuned from version " + std::to_string(*parent)});
    }
  }
  auto version = models_.create_version(made.version, create);
  if (!version) return version.status();
  return version->version;
}

}  // namespace tcl::daemon
