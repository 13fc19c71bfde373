#include "daemon/job_worker.h"

#include <spdlog/spdlog.h>

#include <prometheus/gauge.h>

#include <boost/json.hpp>

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "core/record.h"
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
                     .Register(r)) {}
  prometheus::Family<prometheus::Gauge>& epoch;
  prometheus::Family<prometheus::Gauge>& loss;
  prometheus::Family<prometheus::Gauge>& val_top1;
};

namespace {

// Job options with their defaults (TrainRequest's: what bench_quality --job
// measures); unknown keys are an error (named).
struct TrainOptions {
  int epochs = trainer::TrainRequest{}.epochs;
  std::int64_t max_records = trainer::TrainRequest::default_data_options().max_records;
  double time_budget_s = trainer::TrainRequest{}.time_budget_s;
  double eval_fraction = trainer::TrainRequest::default_data_options().eval_fraction;
  std::uint64_t seed = 0;
  std::string model = "mamba";
  // Fine-tune from this version (alias or number) instead of starting fresh:
  // the result is the platform's active column (alias active.<platform>).
  std::string init;
};

Result<TrainOptions> parse_options(const std::string& text) {
  TrainOptions o;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return Status::invalid_argument("job options are not a JSON object");
  for (const auto& [key, value] : v.as_object()) {
    auto number = [&](double lo, double hi) -> Result<double> {
      if (!value.is_number()) return Status::invalid_argument("option '" + std::string(key) + "' must be a number");
      const double x = value.to_number<double>();
      if (!(x >= lo && x <= hi)) {
        return Status::invalid_argument("option '" + std::string(key) + "' must be in [" + std::to_string(lo) + ", " +
                                        std::to_string(hi) + "]");
      }
      return x;
    };
    Result<double> x = 0.0;
    if (key == "epochs") {
      if (x = number(1, 1000); x) o.epochs = static_cast<int>(*x);
    } else if (key == "max_records") {
      if (x = number(100, 1e8); x) o.max_records = static_cast<std::int64_t>(*x);
    } else if (key == "time_budget_s") {
      if (x = number(1, 7 * 86400); x) o.time_budget_s = *x;
    } else if (key == "eval_fraction") {
      if (x = number(0, 0.9); x) o.eval_fraction = *x;
    } else if (key == "seed") {
      if (x = number(0, 1e15); x) o.seed = static_cast<std::uint64_t>(*x);
    } else if (key == "init") {
      if (!value.is_string() || value.as_string().empty()) {
        return Status::invalid_argument("option 'init' must be a model alias or version, e.g. \"production\"");
      }
      o.init = std::string(value.as_string());
    } else if (key == "model") {
      if (!value.is_string() || (value.as_string() != "mamba" && value.as_string() != "attention" &&
                                 value.as_string() != "mlp")) {
        return Status::invalid_argument("option 'model' must be \"mamba\", \"attention\" or \"mlp\"");
      }
      o.model = std::string(value.as_string());
    } else {
      return Status::invalid_argument("unknown job option '" + std::string(key) + "'");
    }
    if (!x) return x.status();
  }
  return o;
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
  spdlog::info("job id={} kind={} platform={} attempt={} worker={}: started", job.id,
               registry::job_kind_name(job.kind), job.platform, job.attempts, me);
  auto fail = [&](const Status& s) {
    spdlog::warn("job id={}: failed: {}", job.id, s.to_string());
    if (Status f = jobs_.finish(job.id, me, registry::JobOutcome::failure(s.to_string())); !f) {
      spdlog::warn("job id={}: could not record the failure: {}", job.id, f.to_string());
    }
  };
  if (job.kind == registry::JobKind::kDistill) {
    return fail(Status::failed_precondition("distill jobs are not available in this build yet"));
  }
  auto options = parse_options(job.options_json);
  if (!options) return fail(options.status());
  auto platform = platforms_.get(job.platform);
  if (!platform) return fail(platform.status());

  // Read the platform's measurements. Records take ~5-8 KB each in memory,
  // so when there are many more than the job may train on, keep a
  // deterministic share (by program id) instead of all of them.
  const std::int64_t stored = platform->counts.measurements + platform->counts.failed;
  const double keep = stored > 0 ? std::min(1.0, 1.25 * static_cast<double>(options->max_records) /
                                                     (1.0 - options->eval_fraction) / static_cast<double>(stored))
                                 : 1.0;
  std::vector<core::Record> records;
  core::RecordParser parser;
  core::Record record;
  Status read = uploads_.for_each_record(platform->id, registry::UploadKind::kMeasurements,
                                         [&](const registry::StoredRecord& r) {
                                           if (keep < 1.0) {
                                             const unsigned v = std::stoul(r.program_id.substr(0, 8), nullptr, 16);
                                             if (static_cast<double>(v) / 4294967296.0 >= keep) return !stopping_;
                                           }
                                           if (parser.parse(r.record, &record).is_ok()) records.push_back(record);
                                           return !stopping_.load();
                                         });
  if (!read) return fail(read);
  if (stopping_) return;  // the lease lapses; another worker retries

  // Fine-tuning: the starting version's weights (checked against their SHA-256).
  std::optional<std::int64_t> init_version;
  std::string init_weights;
  if (!options->init.empty()) {
    auto id = models_.resolve(options->init);
    if (!id) return fail(id.status().with_context("option 'init'"));
    auto blob = models_.weights(*id);
    if (!blob) return fail(blob.status());
    init_version = *id;
    init_weights = std::move(blob->bytes);
  }

  trainer::TrainRequest request;
  request.init_checkpoint = init_weights;
  request.records = records;
  request.platform.target = platform->target;
  const auto& hw = platform->hardware_params;
  request.platform.hardware = core::HardwareParams{hw[0], hw[1], hw[2], hw[3], hw[4], hw[5], hw[6], hw[7]};
  request.data.eval_fraction = options->eval_fraction;
  request.data.max_records = options->max_records;
  request.model.kind = options->model == "attention" ? trainer::ModelKind::kAttention
                       : options->model == "mlp"     ? trainer::ModelKind::kMlp
                                                     : trainer::ModelKind::kMamba;
  request.epochs = options->epochs;
  request.seed = options->seed;
  request.threads = options_.torch_threads;
  request.time_budget_s = options->time_budget_s;
  std::atomic<bool> cancel{false};
  request.cancel = &cancel;

  // Heartbeats on their own thread: an epoch can outlast the lease.
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::string progress = json::serialize(json::object{{"phase", "training"}, {"records", records.size()}});
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
  const auto on_epoch = [&](int epoch, double loss, double val_top1) {
    json::object p{{"phase", "training"}, {"epoch", epoch}, {"epochs", options->epochs}, {"loss", loss},
                   {"records", records.size()}};
    if (!std::isnan(val_top1)) p["val_top1"] = val_top1;
    {
      std::lock_guard lock(mu);
      progress = json::serialize(p);
    }
    const prometheus::Labels labels{{"platform", job.platform}};
    metrics_->epoch.Add(labels).Set(epoch);
    metrics_->loss.Add(labels).Set(loss);
    if (!std::isnan(val_top1)) metrics_->val_top1.Add(labels).Set(val_top1);
    return !cancel.load();
  };
  auto trained = trainer::train_platform(request, on_epoch);
  {
    std::lock_guard lock(mu);
    done = true;
  }
  cv.notify_all();
  heartbeat.join();
  // The last epoch's progress, so the job shows where training ended.
  (void)jobs_.heartbeat(job.id, me, options_.lease, progress);
  records.clear();
  records.shrink_to_fit();

  if (!trained) {
    if (trained.status().code() == StatusCode::kCancelled && stopping_) return;  // retried after the lease
    return fail(trained.status());
  }
  registry::NewVersion v;
  v.parent = init_version;
  v.platforms = {job.platform};
  v.weights = std::move(trained->checkpoint);
  v.metrics_json = json::serialize(json::object{{job.platform, metrics_json(trained->metrics)}});
  v.config_json = json::serialize(json::object{{"model", options->model},
                                               {"model_config", trainer::config_to_text(trained->config)},
                                               {"epochs", options->epochs},
                                               {"max_records", options->max_records},
                                               {"eval_fraction", options->eval_fraction},
                                               {"seed", options->seed},
                                               {"init", init_version ? json::value(*init_version) : json::value(nullptr)}});
  json::array losses;
  for (double l : trained->epoch_losses) losses.push_back(l);
  v.training_summary_json = json::serialize(json::object{
      {"job", job.id},
      {"records_read", static_cast<std::int64_t>(trained->data.records)},
      {"epochs_done", trained->epochs_done},
      {"steps", trained->steps},
      {"epoch_losses", std::move(losses)},
      {"budget_exhausted", trained->budget_exhausted},
      {"parameters", trained->num_parameters},
      {"wall_s", std::chrono::duration<double>(Clock::now() - started).count()}});
  registry::CreateVersionOptions create;
  create.make_production_if_unset = true;
  create.actor = "job " + std::to_string(job.id);
  auto version = models_.create_version(v, create);
  if (!version) return fail(version.status());
  if (init_version) {
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
  spdlog::info("job id={} platform={}: version {} in {:.1f} s, top1={:.3f}", job.id, job.platform, version->version,
               std::chrono::duration<double>(Clock::now() - started).count(), trained->metrics.top1.mean_ratio);
}

}  // namespace tcl::daemon
