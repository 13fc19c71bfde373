// onboarding/jobs.h — the train and distill workflows (DESIGN §5), from a
// job's options to the version to store: read the platform's measured share
// (record_source.h), build the training request (job_options.h's
// train_request), plan
// (distill.h), train (trainer/train_job.h), judge against the teacher
// (promotion_gate.h) and describe the version (its metrics, config and
// training summary). The job worker (daemon/job_worker.h) claims a job,
// heartbeats while one of these runs and stores what it returns; nothing
// here writes.
//
// Kinds:
//   train    a model of one platform; with "init" (a version) a fine-tuned
//            copy of its model of this platform (adapter folded in): the
//            platform's active column.
//   distill  the new platform folded into the lineage; the teacher is
//            `production`. "method": "best-of" (the default; best_of.h):
//            the student below becomes the trunk, the new platform is
//            served an adapter on the teacher's trunk, and every old
//            platform keeps the teacher's model of it, pinned.
//            "method": "adapter": a low-rank
//            adapter for the platform trains on the teacher's frozen trunk
//            (start_adapter_distill) and the version is the teacher's
//            checkpoint with it attached (trainer::attach_adapter): old
//            platforms' models stay the teacher's, bit for bit. "method":
//            "student": the student starts from the teacher and learns the
//            platform with KD from the active column (alias
//            active.<platform> if it was fine-tuned from this teacher, else
//            fine-tuned here first), KD from the teacher under every old
//            platform's descriptor, and EWC with the teacher's Fisher;
//            refused when the teacher keeps adapters. Whatever the method, only this
//            platform's measurements are trained on; old platforms'
//            measurements are read afterwards (every task, capped per task,
//            JudgedRecords) to measure forgetting, each version scored by
//            its model of the platform (trainer::platform_checkpoint). The
//            promotion gate's decision comes back with the version.
// Every version carries its Fisher information for the next distillation
// (an adapter's version, its trunk's: the teacher's).
//
// Thread-safe for distinct jobs; one run per source and observer at a time.
// Torch-free header.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <boost/json/object.hpp>

#include "core/record.h"
#include "core/status.h"
#include "onboarding/job_options.h"
#include "onboarding/promotion_gate.h"
#include "onboarding/record_source.h"
#include "registry/job_queue.h"
#include "registry/model_store.h"
#include "trainer/device.h"
#include "trainer/train_job.h"

namespace tcl::onboarding {

// What a workflow reports while it runs (the job worker: the job's progress
// by heartbeat, the training gauges). Called from the running job's thread.
class JobObserver {
 public:
  virtual ~JobObserver() = default;
  // Where the job is: {"phase": ..., and what the phase counts}.
  virtual void progress(const boost::json::object& progress) = 0;
  // Training starts, `epochs` planned.
  virtual void training(int epochs) = 0;
  // An epoch finished (`epochs` may grow under min_steps; val_top1 NaN: no
  // validation split).
  virtual void epoch(int epoch, int epochs, double loss, double val_top1) = 0;
  // Training ended: the progress should show now, not at the next beat.
  virtual void trained() = 0;
  // Something the job went on without (a platform not evaluated), for the log.
  virtual void warning(const std::string& message) = 0;
};

// A job as its runner hands it over.
struct JobRun {
  std::int64_t id = 0;  // for the logs and the version's summary
  registry::JobKind kind = registry::JobKind::kTrain;
  std::string platform;  // the job's platform
  trainer::Device train_device = trainer::Device::kAuto;
  int torch_threads = 0;  // evaluation threads; 0 = all cores
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  // Not owned; outlive the run. `cancel`: the job was cancelled or its
  // lease lost (training and evaluation stop). `stopping`: the runner stops
  // (the job is left for its lease to lapse and is retried).
  const std::atomic<bool>* cancel = nullptr;
  const std::atomic<bool>* stopping = nullptr;
};

// The version a job made, to store with the job's finish.
struct JobVersion {
  registry::NewVersion version;      // parent: the job's starting version (none for a fresh model)
  std::optional<GateDecision> gate;  // a distill's promotion decision
  double top1 = 0;                   // the platform's evaluation top-1 (task mean), for the log
};

// OK with a version: store it. OK without one: the job stopped (cancelled,
// its lease lost, or the runner stopping) and nothing is to be recorded.
// An error: the job failed with it (its message says which step).
using JobOutcome = Result<std::optional<JobVersion>>;

// A train job (run.kind kTrain) with its parsed options.
JobOutcome run_train(const JobRun& run, JobOptions options, RecordSource& source, JobObserver& observer);

// A distill job (run.kind kDistill) with its parsed options.
JobOutcome run_distill(const JobRun& run, JobOptions options, RecordSource& source, JobObserver& observer);

}  // namespace tcl::onboarding
