// daemon/job_worker.h — runs training jobs claimed from the database.
//
// Each worker thread loops: claim a job (FOR UPDATE SKIP LOCKED, with a
// lease) → run its workflow (onboarding/jobs.h: run_train or run_distill,
// reading through onboarding/registry_source.h) while a heartbeat thread
// extends the lease and reports the workflow's progress → store the version
// it returns (registry/model_store.h; `production` points at the first one
// automatically, the promotion gate moves it for a distill, a train job with
// "init" moves the platform's active column) → finish the job. A worker that
// dies leaves its lease to expire; the job is then claimed again by any
// worker (tcld serve's threads or a separate `tcld worker` process). A
// cancel seen by the heartbeat stops the training within one step.
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
#include <vector>

#include "onboarding/jobs.h"
#include "registry/job_queue.h"
#include "registry/model_store.h"
#include "registry/platform_store.h"
#include "registry/upload_store.h"
#include "trainer/device.h"

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
  class Heartbeat;
  class Observer;
  void loop(int index);
  void run_job(const registry::Job& job);
  void fail_job(const registry::Job& job, const Status& s);
  void settle_unstored(const registry::Job& job, const Status& s);
  // The version, its status and aliases, and the job's finish as succeeded,
  // in one transaction (ModelStore::create_version with options.job).
  Result<std::int64_t> store_version(const registry::Job& job, const onboarding::JobVersion& made);

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
