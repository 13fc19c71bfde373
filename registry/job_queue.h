// registry/job_queue.h — training and distillation jobs (table `training_jobs`).
//
// Life of a job:
//
//   enqueue ─▶ queued ──claim──▶ running ──finish──▶ succeeded | failed
//                │                  │ ▲
//                │ cancel           │ └─ lease expired: claim() hands it out
//                ▼                  │    again (attempts + 1), or fails it
//            cancelled ◀────────────┘    once attempts = max_attempts
//                       cancel requested, seen at the worker's next
//                       heartbeat() or finish() (or when its lease expires)
//
// A worker owns a running job while the job's `worker` column names it. It
// keeps the lease alive with heartbeat() well before `lease` runs out (say
// every lease/3); if it dies, the lease expires and the next claim() by any
// worker takes the job over (crash recovery). Claims use
// SELECT ... FOR UPDATE SKIP LOCKED, so concurrent workers never take the
// same job and never wait for each other. Every time is the database's
// clock (now()), so workers on other hosts agree on expiry.
//
// Worker ids must be unique per running worker process or thread (e.g.
// "host:pid:n"); a restarted worker must take a new id, or it could take
// over a job that its previous life still holds.
//
// One lineage (DESIGN §5): at most one distill job is running at a time;
// claim() leaves queued distill jobs alone while one runs (a unique index
// in 0005_jobs_models.sql backs this up). Train jobs are not limited.
//
// Thread-safe (every call takes its own pool connection). Does not own
// `pool`; it must outlive the queue.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "registry/pg_pool.h"

namespace tcl::registry {

// Stored as text in SQL (training_jobs.kind / .state): names never change.
enum class JobKind { kTrain, kDistill };
std::string_view job_kind_name(JobKind k);  // "train" | "distill"
std::optional<JobKind> parse_job_kind(std::string_view s);

enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled };
inline constexpr std::array<JobState, 5> kAllJobStates = {JobState::kQueued, JobState::kRunning, JobState::kSucceeded,
                                                          JobState::kFailed, JobState::kCancelled};
std::string_view job_state_name(JobState s);  // "queued" | "running" | "succeeded" | "failed" | "cancelled"
std::optional<JobState> parse_job_state(std::string_view s);
// succeeded, failed and cancelled: the job will never change again.
bool is_finished(JobState s);

struct Job {
  std::int64_t id = 0;
  JobKind kind = JobKind::kTrain;
  std::int64_t platform_id = 0;
  std::string platform;      // the platform's name
  std::string options_json;  // as given to enqueue() (a JSON object, as jsonb renders it)
  JobState state = JobState::kQueued;
  bool cancel_requested = false;  // running, and cancel() was called: the worker should stop
  int attempts = 0;               // claims so far
  int max_attempts = 0;
  std::string worker;                          // the current (or last) owner; "" if never claimed
  std::string progress_json;                   // last heartbeat's progress (a JSON object; "{}" before)
  std::string error;                           // why it failed (or was given up); "" otherwise
  std::optional<std::int64_t> result_version;  // the model version it produced, if any
  // ISO-8601 UTC ("2025-01-31T12:00:00Z"); "" when not (yet) set.
  std::string created_at;
  std::string started_at;  // when the current (last) attempt was claimed
  std::string heartbeat_at;
  std::string lease_expires_at;
  std::string finished_at;
};

// How a worker ends a job. Build with success() or failure().
struct JobOutcome {
  // The job produced `result_version` (a model_versions row), or nothing.
  static JobOutcome success(std::optional<std::int64_t> result_version) { return {true, result_version, {}}; }
  // `error` says why, for a person (must not be empty).
  static JobOutcome failure(std::string error) { return {false, std::nullopt, std::move(error)}; }

  bool succeeded = false;
  std::optional<std::int64_t> result_version;
  std::string error;
};

struct JobStateCount {
  JobState state = JobState::kQueued;
  std::int64_t count = 0;
};

struct JobQueueOptions {
  // Claims a job gets before a lost lease fails it (stored per job at
  // enqueue, 1..100). 3: one crash of a worker host is survived twice over,
  // a job that kills every worker it lands on stops after three.
  int max_attempts = 3;
};

class JobQueue {
 public:
  explicit JobQueue(PgPool& pool, JobQueueOptions options = {});

  // Queues a job for platform `platform_id` with `options_json` (a JSON
  // object; "" means {}). OK: the stored job, state queued.
  // kNotFound: no such platform. kInvalidArgument: options are not a JSON
  // object. kUnavailable: the database is down.
  Result<Job> enqueue(std::int64_t platform_id, JobKind kind, std::string_view options_json);

  // Takes the oldest claimable job for `worker` and leases it until now +
  // `lease`: first a running job whose lease expired (crash recovery; its
  // progress is kept so the worker may resume), else the oldest queued job.
  // attempts is incremented. Before that, expired jobs with no attempts left
  // are failed (error says so) and expired jobs with a cancel request are
  // cancelled. OK: the job, now running and owned by `worker`. kNotFound:
  // nothing to claim now (poll again later). kInvalidArgument: empty worker
  // or lease <= 0.
  Result<Job> claim(std::string_view worker, std::chrono::milliseconds lease);

  // Extends `worker`'s lease on the job to now + `lease` and stores
  // `progress_json` (a JSON object; "" keeps the stored progress). Also
  // accepted after the lease expired, as long as nobody claimed the job since.
  // OK: keep going. kCancelled: cancel() was called; the job is now cancelled
  // and the worker must stop (its progress was stored). kFailedPrecondition:
  // the job is no longer this worker's (lease lost to another worker, or given
  // up): stop without finish(). kNotFound: no such job. kInvalidArgument: bad
  // progress JSON or lease <= 0.
  Status heartbeat(std::int64_t job_id, std::string_view worker, std::chrono::milliseconds lease,
                   std::string_view progress_json);

  // Ends `worker`'s job: succeeded (with result_version) or failed (with the
  // error). OK: recorded. kCancelled: a cancel was requested meanwhile; the job
  // is recorded as cancelled (result_version / error are kept for the record).
  // kFailedPrecondition: the job is not running under this worker (lease lost
  // or already finished differently). A repeat of a finish that was already
  // recorded (e.g. retried after kUnavailable) returns what the first one did.
  // kNotFound: no such job. kInvalidArgument: a failure without error text, or
  // a result_version that does not exist. A job that produces a model version
  // is better finished by ModelStore::create_version (options.job), in the
  // version's own transaction: finish() after a separate create leaves a
  // version without its job if the worker dies in between.
  Status finish(std::int64_t job_id, std::string_view worker, const JobOutcome& outcome);

  // Cancels a job. OK: the job after the call — cancelled if it was queued (or
  // already cancelled), or still running with cancel_requested = true (the
  // worker sees it at its next heartbeat). kFailedPrecondition: it already
  // succeeded or failed. kNotFound: no such job.
  Result<Job> cancel(std::int64_t job_id);

  // kNotFound: no such job.
  Result<Job> get(std::int64_t job_id);

  // Jobs newest first, of one platform or (nullopt) all; at most `limit`
  // (clamped to 1..1000).
  Result<std::vector<Job>> list(std::optional<std::int64_t> platform_id, int limit);

  // One entry per JobState, in kAllJobStates order, zeros included (the
  // tcld_jobs{state} gauge).
  Result<std::vector<JobStateCount>> counts_by_state();

  // The clean-up claim() starts with, on its own: fails expired jobs that
  // have no attempts left and cancels expired jobs with a cancel request.
  // Returns how many jobs it finished. For a periodic sweep, so that the
  // gauge is right even while no worker polls.
  Result<int> reap_expired();

 private:
  PgPool& pool_;
  const JobQueueOptions options_;
};

}  // namespace tcl::registry
