#include "registry/job_queue.h"

#include <pqxx/transaction>

#include <algorithm>
#include <string>

#include "registry/pg_pool_internal.h"

namespace tcl::registry {
namespace {

// Every job query reads these columns, in the order row_to_job expects.
// Times are ISO-8601 UTC, '' when NULL.
#define TCL_ISO_UTC(col) "coalesce(to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), '')"
constexpr const char* kJobColumns =
    "j.id, j.kind, j.platform_id, p.name, j.options::text, j.state, j.cancel_requested_at IS NOT NULL, "
    "j.attempts, j.max_attempts, coalesce(j.worker, ''), j.progress::text, coalesce(j.error, ''), "
    "j.result_version, " TCL_ISO_UTC("j.created_at") ", " TCL_ISO_UTC("j.started_at") ", " TCL_ISO_UTC(
        "j.heartbeat_at") ", " TCL_ISO_UTC("j.lease_expires_at") ", " TCL_ISO_UTC("j.finished_at");
#undef TCL_ISO_UTC
constexpr const char* kJobFrom = " FROM training_jobs j JOIN platforms p ON p.id = j.platform_id ";

// Expired running jobs that must not run again: cancel requested → cancelled,
// no attempts left → failed with the reason. SKIP LOCKED: a job another
// transaction holds (a heartbeat, a concurrent sweep) is left to it.
constexpr const char* kReapSql = R"sql(
UPDATE training_jobs j SET
  state = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled' ELSE 'failed' END,
  error = CASE WHEN j.cancel_requested_at IS NOT NULL THEN j.error
               ELSE format('gave up after %s of %s attempts: the lease of worker %s expired at %s',
                           j.attempts, j.max_attempts, j.worker,
                           to_char(j.lease_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')) END,
  finished_at = now()
WHERE j.id IN (SELECT id FROM training_jobs
               WHERE state = 'running' AND lease_expires_at < now()
                 AND (attempts >= max_attempts OR cancel_requested_at IS NOT NULL)
               FOR UPDATE SKIP LOCKED)
)sql";

// Crash recovery: the oldest running job whose lease expired, with attempts
// left. Reclaiming a distill job leaves the number of running ones unchanged.
// $1 worker, $2 lease in ms.
constexpr const char* kReclaimSql = R"sql(
WITH candidate AS (
  SELECT id FROM training_jobs
  WHERE state = 'running' AND lease_expires_at < now() AND attempts < max_attempts
    AND cancel_requested_at IS NULL
  ORDER BY id LIMIT 1
  FOR UPDATE SKIP LOCKED)
UPDATE training_jobs j SET
  worker = $1, attempts = j.attempts + 1, started_at = now(), heartbeat_at = now(),
  lease_expires_at = now() + $2::bigint * interval '1 millisecond'
FROM candidate WHERE j.id = candidate.id
RETURNING j.id
)sql";

// The oldest queued job; a distill job only while no distill job runs (and
// only when $3). $1 worker, $2 lease in ms.
constexpr const char* kClaimQueuedSql = R"sql(
WITH candidate AS (
  SELECT id FROM training_jobs q
  WHERE state = 'queued'
    AND (q.kind <> 'distill'
         OR ($3::boolean AND NOT EXISTS (SELECT 1 FROM training_jobs r
                                         WHERE r.kind = 'distill' AND r.state = 'running')))
  ORDER BY id LIMIT 1
  FOR UPDATE SKIP LOCKED)
UPDATE training_jobs j SET
  state = 'running', worker = $1, attempts = j.attempts + 1, started_at = now(), heartbeat_at = now(),
  lease_expires_at = now() + $2::bigint * interval '1 millisecond'
FROM candidate WHERE j.id = candidate.id
RETURNING j.id
)sql";

std::string text_or_empty(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string(); }

Result<Job> row_to_job(const pqxx::row& row) {
  Job j;
  j.id = row[0].as<std::int64_t>();
  const auto kind = parse_job_kind(row[1].as<std::string>());
  if (!kind) return Status::internal("job " + std::to_string(j.id) + " has unknown kind '" + row[1].c_str() + "'");
  j.kind = *kind;
  j.platform_id = row[2].as<std::int64_t>();
  j.platform = row[3].as<std::string>();
  j.options_json = row[4].as<std::string>();
  const auto state = parse_job_state(row[5].as<std::string>());
  if (!state) return Status::internal("job " + std::to_string(j.id) + " has unknown state '" + row[5].c_str() + "'");
  j.state = *state;
  j.cancel_requested = row[6].as<bool>() && j.state == JobState::kRunning;
  j.attempts = row[7].as<int>();
  j.max_attempts = row[8].as<int>();
  j.worker = row[9].as<std::string>();
  j.progress_json = row[10].as<std::string>();
  j.error = row[11].as<std::string>();
  if (!row[12].is_null()) j.result_version = row[12].as<std::int64_t>();
  j.created_at = row[13].as<std::string>();
  j.started_at = row[14].as<std::string>();
  j.heartbeat_at = row[15].as<std::string>();
  j.lease_expires_at = row[16].as<std::string>();
  j.finished_at = row[17].as<std::string>();
  return j;
}

// The job, or kNotFound.
Result<Job> read_job(pqxx::work& tx, std::int64_t job_id) {
  const pqxx::result r = tx.exec_params(std::string("SELECT ") + kJobColumns + kJobFrom + "WHERE j.id = $1", job_id);
  if (r.empty()) return Status::not_found("job " + std::to_string(job_id) + " does not exist");
  return row_to_job(r[0]);
}

std::string job_name(std::int64_t job_id) { return "job " + std::to_string(job_id); }

// Why `worker` may no longer act on the job (heartbeat/finish found no
// running row owned by it): cancelled under it → kCancelled, else
// kFailedPrecondition naming the state and owner.
Status not_owned(const Job& job, std::string_view worker) {
  if (job.state == JobState::kCancelled && job.worker == worker) {
    return Status::cancelled(job_name(job.id) + " was cancelled");
  }
  std::string msg = job_name(job.id) + " is not running under worker '" + std::string(worker) + "' (it is " +
                    std::string(job_state_name(job.state));
  if (!job.worker.empty()) msg += ", worker '" + job.worker + "'";
  if (!job.error.empty()) msg += ": " + job.error;
  return Status::failed_precondition(msg + ")");
}

Status check_lease(std::chrono::milliseconds lease) {
  if (lease.count() <= 0) return Status::invalid_argument("lease must be positive");
  return Status::ok();
}

Status check_worker(std::string_view worker) {
  if (worker.empty() || worker.size() > 256) return Status::invalid_argument("worker id must be 1 to 256 bytes");
  return Status::ok();
}

}  // namespace

std::string_view job_kind_name(JobKind k) {
  switch (k) {
    case JobKind::kTrain: return "train";
    case JobKind::kDistill: return "distill";
  }
  return "train";
}

std::optional<JobKind> parse_job_kind(std::string_view s) {
  if (s == "train") return JobKind::kTrain;
  if (s == "distill") return JobKind::kDistill;
  return std::nullopt;
}

std::string_view job_state_name(JobState s) {
  switch (s) {
    case JobState::kQueued: return "queued";
    case JobState::kRunning: return "running";
    case JobState::kSucceeded: return "succeeded";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
  }
  return "queued";
}

std::optional<JobState> parse_job_state(std::string_view s) {
  for (JobState state : kAllJobStates) {
    if (job_state_name(state) == s) return state;
  }
  return std::nullopt;
}

bool is_finished(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled;
}

JobQueue::JobQueue(PgPool& pool, JobQueueOptions options)
    : pool_(pool), options_([&] {
        options.max_attempts = std::clamp(options.max_attempts, 1, 100);
        return options;
      }()) {}

Result<Job> JobQueue::enqueue(std::int64_t platform_id, JobKind kind, std::string_view options_json) {
  const std::string what = "queueing a " + std::string(job_kind_name(kind)) + " job";
  return internal::with_transaction(pool_, what, [&](pqxx::work& tx) -> Result<Job> {
    try {
      const pqxx::row row = tx.exec_params1(
          "INSERT INTO training_jobs (kind, platform_id, options, max_attempts) "
          "VALUES ($1, $2, coalesce(nullif($3, '')::jsonb, '{}'), $4) RETURNING id",
          std::string(job_kind_name(kind)), platform_id, std::string(options_json), options_.max_attempts);
      return read_job(tx, row[0].as<std::int64_t>());
    } catch (const pqxx::foreign_key_violation&) {
      return Status::not_found("platform id " + std::to_string(platform_id) + " does not exist");
    } catch (const pqxx::check_violation&) {
      return Status::invalid_argument("job options must be a JSON object");
    }
  });
}

Result<Job> JobQueue::claim(std::string_view worker, std::chrono::milliseconds lease) {
  if (Status s = check_worker(worker); !s) return s;
  if (Status s = check_lease(lease); !s) return s;
  const std::string what = "claiming a job for worker '" + std::string(worker) + "'";
  const std::string worker_text(worker);
  const std::int64_t lease_ms = lease.count();
  // Committed whatever the outcome: the clean-up stands even when nothing
  // is claimed.
  return internal::with_connection(pool_, what, [&](pqxx::connection& conn) -> Result<Job> {
    pqxx::work tx(conn);
    tx.exec0(kReapSql);
    pqxx::result r = tx.exec_params(kReclaimSql, worker_text, lease_ms);
    if (r.empty()) {
      // Two workers may each take a different queued distill job at the same
      // instant (neither sees the other's uncommitted claim); the unique index
      // then refuses the second. That one rolls back to the savepoint and
      // looks again, skipping distill jobs. (A plain SAVEPOINT: pqxx 6.4's
      // subtransaction sends none before an exec_params.)
      for (const bool allow_distill : {true, false}) {
        tx.exec0("SAVEPOINT claim_queued");
        try {
          r = tx.exec_params(kClaimQueuedSql, worker_text, lease_ms, allow_distill);
          tx.exec0("RELEASE SAVEPOINT claim_queued");
          break;
        } catch (const pqxx::unique_violation&) {
          tx.exec0("ROLLBACK TO SAVEPOINT claim_queued");
          r = pqxx::result();
        }
      }
    }
    if (r.empty()) {
      tx.commit();
      return Status::not_found("no job to claim");
    }
    auto job = read_job(tx, r[0][0].as<std::int64_t>());
    if (!job) return job.status();  // rolled back
    tx.commit();
    return job;
  });
}

Status JobQueue::heartbeat(std::int64_t job_id, std::string_view worker, std::chrono::milliseconds lease,
                           std::string_view progress_json) {
  if (Status s = check_lease(lease); !s) return s;
  const std::string what = "heartbeat of " + job_name(job_id);
  // Committed also when reporting kCancelled: noticing the cancel ends the job.
  return internal::with_connection(pool_, what, [&](pqxx::connection& conn) -> Status {
    pqxx::work tx(conn);
    pqxx::result r;
    try {
      r = tx.exec_params(R"sql(
UPDATE training_jobs SET
  progress = coalesce(nullif($3, '')::jsonb, progress),
  heartbeat_at = now(),
  lease_expires_at = CASE WHEN cancel_requested_at IS NULL
                          THEN now() + $4::bigint * interval '1 millisecond' ELSE lease_expires_at END,
  state = CASE WHEN cancel_requested_at IS NULL THEN 'running' ELSE 'cancelled' END,
  finished_at = CASE WHEN cancel_requested_at IS NULL THEN NULL ELSE now() END
WHERE id = $1 AND state = 'running' AND worker = $2
RETURNING state
)sql",
                         job_id, std::string(worker), std::string(progress_json), lease.count());
    } catch (const pqxx::check_violation&) {
      return Status::invalid_argument("job progress must be a JSON object");
    }
    if (r.empty()) {
      auto job = read_job(tx, job_id);
      if (!job) return job.status();
      return not_owned(*job, worker);  // nothing changed
    }
    tx.commit();
    if (r[0][0].as<std::string>() == "cancelled") {
      return Status::cancelled(job_name(job_id) + " was cancelled; stop");
    }
    return Status::ok();
  });
}

Status JobQueue::finish(std::int64_t job_id, std::string_view worker, const JobOutcome& outcome) {
  if (!outcome.succeeded && outcome.error.empty()) {
    return Status::invalid_argument("a failed job needs an error message");
  }
  const std::string what = "finishing " + job_name(job_id);
  // Committed also when reporting kCancelled (the job ends as cancelled).
  return internal::with_connection(pool_, what, [&](pqxx::connection& conn) -> Status {
    pqxx::work tx(conn);
    pqxx::result r;
    try {
      r = tx.exec_params(R"sql(
UPDATE training_jobs SET
  state = CASE WHEN cancel_requested_at IS NOT NULL THEN 'cancelled'
               WHEN $3::boolean THEN 'succeeded' ELSE 'failed' END,
  result_version = nullif($4, '')::bigint,
  error = nullif($5, ''),
  finished_at = now()
WHERE id = $1 AND state = 'running' AND worker = $2
RETURNING state
)sql",
                         job_id, std::string(worker), outcome.succeeded, text_or_empty(outcome.result_version),
                         outcome.succeeded ? std::string() : outcome.error);
    } catch (const pqxx::foreign_key_violation&) {
      return Status::invalid_argument("model version " + text_or_empty(outcome.result_version) + " does not exist");
    }
    if (!r.empty()) {
      tx.commit();
      if (r[0][0].as<std::string>() == "cancelled") {
        return Status::cancelled(job_name(job_id) + " was cancelled while running; recorded as cancelled");
      }
      return Status::ok();
    }
    auto job = read_job(tx, job_id);
    if (!job) return job.status();
    // A retried finish (the first COMMIT's outcome was unknown) that was in
    // fact recorded: same owner, same outcome.
    if (job->worker == worker) {
      const bool same = outcome.succeeded
                            ? job->state == JobState::kSucceeded && job->result_version == outcome.result_version
                            : job->state == JobState::kFailed && job->error == outcome.error;
      if (same) return Status::ok();
    }
    return not_owned(*job, worker);
  });
}

Result<Job> JobQueue::cancel(std::int64_t job_id) {
  const std::string what = "cancelling " + job_name(job_id);
  return internal::with_transaction(pool_, what, [&](pqxx::work& tx) -> Result<Job> {
    tx.exec_params(R"sql(
UPDATE training_jobs SET
  state = CASE WHEN state = 'queued' THEN 'cancelled' ELSE state END,
  finished_at = CASE WHEN state = 'queued' THEN now() ELSE finished_at END,
  cancel_requested_at = CASE WHEN state = 'running' THEN coalesce(cancel_requested_at, now())
                             ELSE cancel_requested_at END
WHERE id = $1 AND state IN ('queued', 'running')
)sql",
                   job_id);
    auto job = read_job(tx, job_id);
    if (!job) return job.status();
    if (job->state == JobState::kSucceeded || job->state == JobState::kFailed) {
      return Status::failed_precondition(job_name(job_id) + " already " + std::string(job_state_name(job->state)));
    }
    return job;
  });
}

Result<Job> JobQueue::get(std::int64_t job_id) {
  return internal::with_transaction(pool_, "reading " + job_name(job_id),
                                    [&](pqxx::work& tx) -> Result<Job> { return read_job(tx, job_id); });
}

Result<std::vector<Job>> JobQueue::list(std::optional<std::int64_t> platform_id, int limit) {
  limit = std::clamp(limit, 1, 1000);
  return internal::with_transaction(pool_, "listing jobs", [&](pqxx::work& tx) -> Result<std::vector<Job>> {
    std::vector<Job> out;
    const pqxx::result r =
        tx.exec_params(std::string("SELECT ") + kJobColumns + kJobFrom +
                           "WHERE nullif($1, '')::bigint IS NULL OR j.platform_id = nullif($1, '')::bigint "
                           "ORDER BY j.id DESC LIMIT $2",
                       text_or_empty(platform_id), limit);
    out.reserve(r.size());
    for (const pqxx::row& row : r) {
      auto job = row_to_job(row);
      if (!job) return job.status();
      out.push_back(std::move(*job));
    }
    return out;
  });
}

Result<std::vector<JobStateCount>> JobQueue::counts_by_state() {
  return internal::with_transaction(pool_, "counting jobs", [&](pqxx::work& tx) -> Result<std::vector<JobStateCount>> {
    std::vector<JobStateCount> out;
    out.reserve(kAllJobStates.size());
    for (JobState s : kAllJobStates) out.push_back({s, 0});
    for (const pqxx::row& row : tx.exec("SELECT state, count(*) FROM training_jobs GROUP BY state")) {
      const auto state = parse_job_state(row[0].as<std::string>());
      if (!state) return Status::internal("unknown job state '" + row[0].as<std::string>() + "'");
      out[static_cast<std::size_t>(*state)].count = row[1].as<std::int64_t>();
    }
    return out;
  });
}

Result<int> JobQueue::reap_expired() {
  return internal::with_transaction(pool_, "reaping expired jobs", [&](pqxx::work& tx) -> Result<int> {
    return static_cast<int>(tx.exec0(kReapSql).affected_rows());
  });
}

}  // namespace tcl::registry
