// daemon/job_worker.h — runs training jobs claimed from the database.
//
// Each worker thread loops: claim a job (FOR UPDATE SKIP LOCKED, with a
// lease) → read the platform's measurements → train (trainer/train_job.h)
// while a heartbeat thread extends the lease and reports progress → store
// the version (registry/model_store.h; `production` points at the first one
// automatically) → finish the job. A worker that dies leaves its lease to
// expire; the job is then claimed again by any worker (tcld serve's threads
// or a separate `tcld worker` process). A cancel seen by the heartbeat stops
// the training within one step.
//
// Kinds (DESIGN §5):
//   train             a model of one platform; with "init" (a version) a
//                     fine-tuned copy of its model of this platform (adapter
//                     folded in): the platform's active column, alias
//                     active.<platform>.
//   distill           the new platform folded into the lineage; the teacher
//                     is `production`. "method": "adapter" (the default):
//                     a low-rank adapter for the platform trains on the
//                     teacher's frozen trunk (FineTune::adapter) and the
//                     version is the teacher's checkpoint with it attached
//                     (trainer::attach_adapter): old platforms' models stay
//                     the teacher's, bit for bit. "method": "student": the
//                     student starts from the teacher and learns the platform
//                     with KD from the active column (its alias if it was
//                     fine-tuned from this teacher, else fine-tuned here
//                     first), KD from the teacher under every old platform's
//                     descriptor, and EWC with the teacher's Fisher; refused
//                     when the teacher keeps adapters. Either way only this
//                     platform's rows are read for training; old platforms'
//                     rows are read afterwards (every task, capped per task),
//                     to measure forgetting, each version scored by its model
//                     of the platform (trainer::platform_checkpoint). The
//                     promotion gate (onboarding/promotion_gate.h) then moves
//                     `production` or keeps the version as a candidate, with
//                     its reasons.
// The onboarding steps (the distillation's plan, the evaluation against the
// teacher, the gate) are onboarding/'s; this file reads through registry/,
// trains through trainer/, heartbeats and stores.
// Every version stores its Fisher information for the next distillation
// (an adapter's version, its trunk's: the teacher's).
//
// Thread-safety: start()/stop() from one thread. Does not own the stores or
// the metrics registry; they must outlive the worker.
#pragma once

#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include <boost/json/object.hpp>

#include <optional>

#include "core/record.h"
#include "onboarding/distill.h"
#include "onboarding/promotion_gate.h"
#include "registry/job_queue.h"
#include "registry/model_store.h"
#include "registry/platform_store.h"
#include "registry/upload_store.h"
#include "trainer/device.h"
#include "trainer/evaluation.h"
#include "trainer/train_job.h"

namespace tcl::api {
struct JobOptions;
}

namespace tcl::daemon {

struct JobWorkerOptions {
  std::string worker_id;                                  // unique per process (host:pid)
  int threads = 1;                                        // jobs trained at once
  int torch_threads = 0;                                  // intra-op threads per job; 0 = all cores
  trainer::Device train_device = trainer::Device::kAuto;  // where jobs train (evaluation stays on the CPU)
  std::chrono::milliseconds lease{60000};                 // a job's lease; heartbeats every lease/4
  std::chrono::milliseconds poll_interval{1000};          // wait between empty claims
  bool metrics_names = false;  // platform names as /metrics label values (else api::name_label's hashes)
};

class JobWorker {
 public:
  JobWorker(JobWorkerOptions options, registry::JobQueue& jobs, registry::PlatformStore& platforms,
            registry::UploadStore& uploads, registry::ModelStore& models, prometheus::Registry& metrics);
  ~JobWorker();  // stops
  JobWorker(const JobWorker&) = delete;
  JobWorker& operator=(const JobWorker&) = delete;

  void start();
  // Asks running jobs to stop (their leases lapse, so another worker retries
  // them) and joins the threads.
  void stop();

 private:
  struct Metrics;
  void loop(int index);
  void run_job(const registry::Job& job);
  // The platform's measurements (a seeded share when there are far more than
  // max_records; all when max_records is 0). `program_ids`, when given,
  // receives the stored program id of every record returned.
  Result<std::vector<core::Record>> read_platform_records(const registry::PlatformRow& platform,
                                                          std::int64_t max_records, double eval_fraction,
                                                          std::unordered_set<std::string>* program_ids = nullptr);
  // What the promotion gate judges a platform on (onboarding::JudgedRecords):
  // per_task measured records of each task at most, of every task or of the
  // standing split's only. Memory and time stay bounded on 500k records.
  Result<std::vector<core::Record>> read_judged_records(const registry::PlatformRow& platform, bool standing_split_only,
                                                        std::int64_t per_task);
  // The platform's candidates whose program ids are not in `measured` (its
  // distill inputs without labels, DESIGN §5.2): about max_records of them,
  // a deterministic share by program id when the pool is larger.
  Result<std::vector<core::Record>> read_unmeasured_candidates(const registry::PlatformRow& platform,
                                                               const std::unordered_set<std::string>& measured,
                                                               std::int64_t max_records);
  // The old platforms' bank (DistillTargets::old_bank): programs of
  // `old_platforms`' tasks, about max_records in all (an equal share each, a
  // deterministic share by program id), read from their measurements and
  // candidates with every measurement dropped: nothing old is trained on.
  Result<std::vector<core::Record>> read_old_bank(const std::vector<std::string>& old_platforms,
                                                  std::int64_t max_records);
  // A student and its teacher on one platform, on what the gate judges
  // (onboarding/distill.h: every task of an old platform, the standing
  // split of the new one, kJudgedProgramsPerTask programs each at most).
  Result<onboarding::PairedScores> evaluate_platform(const std::string& name, bool is_new, const std::string& student,
                                                     const std::string& teacher);

  // run_job's steps (job_worker.cc says what each does).
  class Heartbeat;
  struct Start;
  struct Distill;
  void fail_job(const registry::Job& job, const Status& s);
  void settle_unstored(const registry::Job& job, const Status& s);
  Result<Start> read_start(const std::string& name, bool distill);
  // An adapter distill's version (trainer::attach_adapter): production's
  // checkpoint with `adapter` kept for `platform`, and production's Fisher,
  // which is its trunk's.
  Status keep_adapter_version(const Start& production, const std::string& platform, const std::string& adapter,
                              registry::NewVersion* v);
  Result<std::unique_ptr<Distill>> plan_distill(const registry::Job& job, const api::JobOptions& o,
                                                const registry::PlatformRow& platform, const Start& teacher,
                                                const trainer::TrainRequest& request,
                                                const std::unordered_set<std::string>& measured, Heartbeat& heartbeat);
  Result<trainer::TrainResult> train(const registry::Job& job, const trainer::TrainRequest& request, int epochs,
                                     Heartbeat& heartbeat);
  // nullopt: cancelled (or the lease lost) while evaluating.
  std::optional<onboarding::GateDecision> judge_distilled(const registry::Job& job,
                                                          const std::vector<std::string>& covered, const Start& teacher,
                                                          const std::string& student, double margin,
                                                          boost::json::object* metrics, Heartbeat& heartbeat);
  static std::string config_json(const registry::Job& job, const api::JobOptions& o,
                                 const trainer::TrainResult& trained, const Start& start, const Distill* d);
  static std::string training_summary_json(const registry::Job& job, const trainer::TrainResult& trained,
                                           bool fine_tune_scheduled, std::chrono::steady_clock::time_point started);
  // The version, its status and aliases, and the job's finish as succeeded,
  // in one transaction (ModelStore::create_version with options.job).
  Result<std::int64_t> store_version(const registry::Job& job, const registry::NewVersion& v,
                                     const std::optional<onboarding::GateDecision>& gate, const Start& start);

  const JobWorkerOptions options_;
  registry::JobQueue& jobs_;
  registry::PlatformStore& platforms_;
  registry::UploadStore& uploads_;
  registry::ModelStore& models_;
  std::unique_ptr<Metrics> metrics_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

}  // namespace tcl::daemon
