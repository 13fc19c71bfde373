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

#include "registry/job_queue.h"
#include "registry/model_store.h"
#include "registry/platform_store.h"
#include "registry/upload_store.h"

namespace tcl::daemon {

struct JobWorkerOptions {
  std::string worker_id;                         // unique per process (host:pid)
  int threads = 1;                               // jobs trained at once
  int torch_threads = 0;                         // intra-op threads per job; 0 = all cores
  std::chrono::milliseconds lease{60000};        // a job's lease; heartbeats every lease/4
  std::chrono::milliseconds poll_interval{1000};  // wait between empty claims
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
