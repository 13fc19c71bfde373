#include "registry/job_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "registry/model_store.h"
#include "tests/registry/registry_test_env.h"

namespace tcl::registry {
namespace {

using namespace std::chrono_literals;
using tcl::testing::PgCluster;
using testing::exec_sql;
using testing::query_text;

// Long enough never to expire during a test / short enough to be expired
// after kPastLease of sleep.
constexpr auto kLongLease = std::chrono::milliseconds(std::chrono::hours(1));
constexpr auto kShortLease = 1ms;
constexpr auto kPastLease = 20ms;

class JobQueueTest : public testing::MigratedDbTest {
 protected:
  void SetUp() override {
    MigratedDbTest::SetUp();
    if (HasFatalFailure()) return;
    cpu_ = add_platform("cpu");
    gpu_ = add_platform("gpu");
    if (HasFailure()) return;
    queue_ = std::make_unique<JobQueue>(*pool_);
  }

  Job enqueue(JobKind kind, std::int64_t platform = 0, const std::string& options = "") {
    auto job = queue_->enqueue(platform == 0 ? cpu_ : platform, kind, options);
    EXPECT_TRUE(job.is_ok()) << job.status().to_string();
    return job.is_ok() ? *job : Job{};
  }

  std::string column(std::int64_t job_id, const std::string& expr) {
    return query_text(url_, "SELECT " + expr + " FROM training_jobs WHERE id = " + std::to_string(job_id));
  }

  std::int64_t cpu_ = 0;
  std::int64_t gpu_ = 0;
  std::unique_ptr<JobQueue> queue_;
};

TEST(JobNames, RoundTrip) {
  for (JobState s : kAllJobStates) EXPECT_EQ(parse_job_state(job_state_name(s)), s);
  for (JobKind k : {JobKind::kTrain, JobKind::kDistill}) EXPECT_EQ(parse_job_kind(job_kind_name(k)), k);
  EXPECT_FALSE(parse_job_kind("finetune").has_value());
  EXPECT_FALSE(parse_job_state("done").has_value());
  EXPECT_TRUE(is_finished(JobState::kCancelled));
  EXPECT_FALSE(is_finished(JobState::kRunning));
}

TEST_F(JobQueueTest, EnqueueGetAndList) {
  Job a = enqueue(JobKind::kTrain, cpu_, R"({"epochs": 3})");
  EXPECT_GT(a.id, 0);
  EXPECT_EQ(a.kind, JobKind::kTrain);
  EXPECT_EQ(a.platform_id, cpu_);
  EXPECT_EQ(a.platform, "cpu");
  EXPECT_EQ(a.options_json, R"({"epochs": 3})");
  EXPECT_EQ(a.state, JobState::kQueued);
  EXPECT_EQ(a.attempts, 0);
  EXPECT_EQ(a.max_attempts, 3);
  EXPECT_FALSE(a.cancel_requested);
  EXPECT_EQ(a.worker, "");
  EXPECT_EQ(a.progress_json, "{}");
  EXPECT_FALSE(a.result_version.has_value());
  EXPECT_EQ(a.created_at.size(), 20u) << a.created_at;
  EXPECT_EQ(a.started_at, "");
  EXPECT_EQ(a.finished_at, "");

  Job b = enqueue(JobKind::kDistill, gpu_);
  EXPECT_EQ(b.options_json, "{}");
  Job c = enqueue(JobKind::kTrain, gpu_);

  auto got = queue_->get(a.id);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got->options_json, a.options_json);
  EXPECT_EQ(queue_->get(9999).status().code(), StatusCode::kNotFound);

  auto all = queue_->list(std::nullopt, 10);
  ASSERT_TRUE(all.is_ok()) << all.status().to_string();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id, c.id);  // newest first
  EXPECT_EQ((*all)[2].id, a.id);
  auto on_gpu = queue_->list(gpu_, 10);
  ASSERT_TRUE(on_gpu.is_ok());
  ASSERT_EQ(on_gpu->size(), 2u);
  EXPECT_EQ((*on_gpu)[0].id, c.id);
  EXPECT_EQ((*on_gpu)[1].id, b.id);
  EXPECT_EQ(queue_->list(gpu_, 1)->size(), 1u);
}

TEST_F(JobQueueTest, EnqueueRejectsBadInput) {
  EXPECT_EQ(queue_->enqueue(4242, JobKind::kTrain, "").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(queue_->enqueue(cpu_, JobKind::kTrain, "[1, 2]").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(queue_->enqueue(cpu_, JobKind::kTrain, "{not json").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM training_jobs"), "0");
}

TEST_F(JobQueueTest, ClaimTakesTheOldestQueuedJobAndLeasesIt) {
  Job a = enqueue(JobKind::kTrain);
  Job b = enqueue(JobKind::kTrain, gpu_);

  auto first = queue_->claim("w1", kLongLease);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ(first->id, a.id);
  EXPECT_EQ(first->state, JobState::kRunning);
  EXPECT_EQ(first->worker, "w1");
  EXPECT_EQ(first->attempts, 1);
  EXPECT_NE(first->started_at, "");
  EXPECT_NE(first->heartbeat_at, "");
  EXPECT_NE(first->lease_expires_at, "");
  EXPECT_EQ(column(a.id, "lease_expires_at > now() + interval '59 minutes'"), "t");

  auto second = queue_->claim("w2", kLongLease);
  ASSERT_TRUE(second.is_ok());
  EXPECT_EQ(second->id, b.id);
  EXPECT_EQ(second->platform, "gpu");

  auto none = queue_->claim("w3", kLongLease);
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);

  EXPECT_EQ(queue_->claim("", kLongLease).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(queue_->claim("w4", 0ms).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(JobQueueTest, ConcurrentWorkersNeverGetTheSameJob) {
  constexpr int kJobs = 60;
  constexpr int kWorkers = 6;
  auto pool = testing::make_pool(url_, kWorkers + 1);
  JobQueue queue(*pool);
  for (int i = 0; i < kJobs; ++i) ASSERT_TRUE(queue.enqueue(cpu_, JobKind::kTrain, "").is_ok());

  std::mutex mu;
  std::vector<std::int64_t> claimed;  // guarded by mu
  std::atomic<int> errors{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      ready.fetch_add(1);
      while (ready.load() < kWorkers) std::this_thread::yield();  // start together
      const std::string name = "worker-" + std::to_string(w);
      for (;;) {
        auto job = queue.claim(name, kLongLease);
        if (!job) {
          if (job.status().code() != StatusCode::kNotFound) errors.fetch_add(1);
          return;
        }
        std::lock_guard lock(mu);
        claimed.push_back(job->id);
      }
    });
  }
  for (auto& t : workers) t.join();

  EXPECT_EQ(errors.load(), 0);
  const std::set<std::int64_t> distinct(claimed.begin(), claimed.end());
  EXPECT_EQ(claimed.size(), static_cast<std::size_t>(kJobs));
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(kJobs));
  // Each job was claimed exactly once.
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM training_jobs WHERE state = 'running' AND attempts = 1"),
            std::to_string(kJobs));
}

TEST_F(JobQueueTest, ExpiredLeaseIsReclaimedByAnotherWorker) {
  Job job = enqueue(JobKind::kTrain);
  auto w1 = queue_->claim("w1", kShortLease);
  ASSERT_TRUE(w1.is_ok());
  std::this_thread::sleep_for(kPastLease);

  // Expired, but nobody took it yet: the owner may still extend it.
  ASSERT_TRUE(queue_->heartbeat(job.id, "w1", kShortLease, R"({"epoch": 1})").is_ok());
  std::this_thread::sleep_for(kPastLease);

  // w1 "crashed": w2 takes over, with w1's progress to resume from.
  auto w2 = queue_->claim("w2", kLongLease);
  ASSERT_TRUE(w2.is_ok()) << w2.status().to_string();
  EXPECT_EQ(w2->id, job.id);
  EXPECT_EQ(w2->worker, "w2");
  EXPECT_EQ(w2->attempts, 2);
  EXPECT_EQ(w2->state, JobState::kRunning);
  EXPECT_EQ(w2->progress_json, R"({"epoch": 1})");

  // A live lease is not taken over.
  EXPECT_EQ(queue_->claim("w3", kLongLease).status().code(), StatusCode::kNotFound);

  // w1 comes back: its lease is gone.
  EXPECT_EQ(queue_->heartbeat(job.id, "w1", kLongLease, "").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(queue_->finish(job.id, "w1", JobOutcome::success(std::nullopt)).code(), StatusCode::kFailedPrecondition);

  ASSERT_TRUE(queue_->finish(job.id, "w2", JobOutcome::success(std::nullopt)).is_ok());
  auto done = queue_->get(job.id);
  ASSERT_TRUE(done.is_ok());
  EXPECT_EQ(done->state, JobState::kSucceeded);
  EXPECT_EQ(done->worker, "w2");
  EXPECT_EQ(done->attempts, 2);
  EXPECT_NE(done->finished_at, "");
}

TEST_F(JobQueueTest, ExhaustedAttemptsFailTheJobWithTheReason) {
  JobQueue queue(*pool_, JobQueueOptions{.max_attempts = 2});
  auto job = queue.enqueue(cpu_, JobKind::kDistill, "");
  ASSERT_TRUE(job.is_ok());
  EXPECT_EQ(job->max_attempts, 2);

  ASSERT_EQ(queue.claim("w1", kShortLease)->attempts, 1);
  std::this_thread::sleep_for(kPastLease);
  ASSERT_EQ(queue.claim("w2", kShortLease)->attempts, 2);
  std::this_thread::sleep_for(kPastLease);

  // No attempt left: the next claim gives it up instead of handing it out.
  EXPECT_EQ(queue.claim("w3", kLongLease).status().code(), StatusCode::kNotFound);
  auto failed = queue.get(job->id);
  ASSERT_TRUE(failed.is_ok());
  EXPECT_EQ(failed->state, JobState::kFailed);
  EXPECT_EQ(failed->attempts, 2);
  EXPECT_NE(failed->error.find("gave up after 2 of 2 attempts"), std::string::npos) << failed->error;
  EXPECT_NE(failed->error.find("w2"), std::string::npos) << failed->error;
  EXPECT_NE(failed->finished_at, "");
  EXPECT_EQ(queue.heartbeat(job->id, "w2", kLongLease, "").code(), StatusCode::kFailedPrecondition);

  // reap_expired() does the same without a claim.
  JobQueue once(*pool_, JobQueueOptions{.max_attempts = 1});
  auto other = once.enqueue(cpu_, JobKind::kTrain, "");
  ASSERT_TRUE(other.is_ok());
  ASSERT_TRUE(once.claim("w4", kShortLease).is_ok());
  std::this_thread::sleep_for(kPastLease);
  auto reaped = once.reap_expired();
  ASSERT_TRUE(reaped.is_ok()) << reaped.status().to_string();
  EXPECT_EQ(*reaped, 1);
  EXPECT_EQ(once.get(other->id)->state, JobState::kFailed);
  EXPECT_EQ(*once.reap_expired(), 0);
}

TEST_F(JobQueueTest, HeartbeatStoresProgressAndExtendsTheLease) {
  Job job = enqueue(JobKind::kTrain);
  ASSERT_TRUE(queue_->claim("w1", 1s).is_ok());
  ASSERT_TRUE(queue_->heartbeat(job.id, "w1", kLongLease, R"({"epoch": 2, "loss": 0.5})").is_ok());
  EXPECT_EQ(column(job.id, "progress->>'loss'"), "0.5");
  EXPECT_EQ(column(job.id, "lease_expires_at > now() + interval '59 minutes'"), "t");
  // "" keeps the stored progress.
  ASSERT_TRUE(queue_->heartbeat(job.id, "w1", kLongLease, "").is_ok());
  EXPECT_EQ(queue_->get(job.id)->progress_json, R"({"loss": 0.5, "epoch": 2})");

  EXPECT_EQ(queue_->heartbeat(job.id, "w1", kLongLease, "[1]").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(queue_->heartbeat(job.id, "w1", kLongLease, "{oops").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(queue_->heartbeat(job.id, "w2", kLongLease, "").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(queue_->heartbeat(9999, "w1", kLongLease, "").code(), StatusCode::kNotFound);
  EXPECT_EQ(queue_->get(job.id)->progress_json, R"({"loss": 0.5, "epoch": 2})");
}

TEST_F(JobQueueTest, CancellingAQueuedJobIsImmediate) {
  Job job = enqueue(JobKind::kDistill);
  auto cancelled = queue_->cancel(job.id);
  ASSERT_TRUE(cancelled.is_ok()) << cancelled.status().to_string();
  EXPECT_EQ(cancelled->state, JobState::kCancelled);
  EXPECT_FALSE(cancelled->cancel_requested);
  EXPECT_NE(cancelled->finished_at, "");
  EXPECT_EQ(queue_->claim("w1", kLongLease).status().code(), StatusCode::kNotFound);
  // Again: still cancelled, not an error.
  EXPECT_EQ(queue_->cancel(job.id)->state, JobState::kCancelled);
  EXPECT_EQ(queue_->cancel(9999).status().code(), StatusCode::kNotFound);
}

TEST_F(JobQueueTest, HeartbeatAfterCancelTellsTheWorkerToStop) {
  Job job = enqueue(JobKind::kTrain);
  ASSERT_TRUE(queue_->claim("w1", kLongLease).is_ok());
  auto requested = queue_->cancel(job.id);
  ASSERT_TRUE(requested.is_ok());
  EXPECT_EQ(requested->state, JobState::kRunning);
  EXPECT_TRUE(requested->cancel_requested);
  EXPECT_EQ(queue_->get(job.id)->state, JobState::kRunning);

  const Status hb = queue_->heartbeat(job.id, "w1", kLongLease, R"({"epoch": 7})");
  EXPECT_EQ(hb.code(), StatusCode::kCancelled) << hb.to_string();
  auto after = queue_->get(job.id);
  ASSERT_TRUE(after.is_ok());
  EXPECT_EQ(after->state, JobState::kCancelled);
  EXPECT_EQ(after->progress_json, R"({"epoch": 7})");
  EXPECT_NE(after->finished_at, "");
  // The worker keeps hearing it, and cannot finish the job any more.
  EXPECT_EQ(queue_->heartbeat(job.id, "w1", kLongLease, "").code(), StatusCode::kCancelled);
  EXPECT_EQ(queue_->finish(job.id, "w1", JobOutcome::success(std::nullopt)).code(), StatusCode::kCancelled);
  EXPECT_EQ(queue_->get(job.id)->state, JobState::kCancelled);
}

TEST_F(JobQueueTest, FinishAfterCancelRequestRecordsCancelled) {
  Job job = enqueue(JobKind::kTrain);
  ASSERT_TRUE(queue_->claim("w1", kLongLease).is_ok());
  ASSERT_TRUE(queue_->cancel(job.id).is_ok());
  EXPECT_EQ(queue_->finish(job.id, "w1", JobOutcome::failure("stopped early")).code(), StatusCode::kCancelled);
  auto after = queue_->get(job.id);
  EXPECT_EQ(after->state, JobState::kCancelled);
  EXPECT_EQ(after->error, "stopped early");
}

TEST_F(JobQueueTest, ExpiredJobWithACancelRequestIsCancelledNotRetried) {
  Job job = enqueue(JobKind::kTrain);
  ASSERT_TRUE(queue_->claim("w1", kShortLease).is_ok());
  ASSERT_TRUE(queue_->cancel(job.id).is_ok());
  std::this_thread::sleep_for(kPastLease);
  EXPECT_EQ(queue_->claim("w2", kLongLease).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(queue_->get(job.id)->state, JobState::kCancelled);
}

TEST_F(JobQueueTest, OnlyTheOwnerFinishes) {
  Job job = enqueue(JobKind::kTrain);
  ASSERT_TRUE(queue_->claim("w1", kLongLease).is_ok());

  const Status foreign = queue_->finish(job.id, "w2", JobOutcome::success(std::nullopt));
  EXPECT_EQ(foreign.code(), StatusCode::kFailedPrecondition) << foreign.to_string();
  EXPECT_NE(foreign.message().find("w1"), std::string::npos) << foreign.to_string();
  EXPECT_EQ(queue_->get(job.id)->state, JobState::kRunning);

  EXPECT_EQ(queue_->finish(job.id, "w1", JobOutcome::failure("")).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(queue_->finish(job.id, "w1", JobOutcome::failure("out of memory")).is_ok());
  auto failed = queue_->get(job.id);
  EXPECT_EQ(failed->state, JobState::kFailed);
  EXPECT_EQ(failed->error, "out of memory");

  // A retried finish with the same outcome is fine; a different one is not.
  EXPECT_TRUE(queue_->finish(job.id, "w1", JobOutcome::failure("out of memory")).is_ok());
  EXPECT_EQ(queue_->finish(job.id, "w1", JobOutcome::success(std::nullopt)).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(queue_->cancel(job.id).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(queue_->finish(9999, "w1", JobOutcome::success(std::nullopt)).code(), StatusCode::kNotFound);
}

TEST_F(JobQueueTest, FinishRecordsTheResultVersion) {
  ModelStore models(*pool_);
  NewVersion v;
  v.platforms = {"cpu"};
  v.weights = "weights";
  auto version = models.create_version(v);
  ASSERT_TRUE(version.is_ok()) << version.status().to_string();

  Job job = enqueue(JobKind::kTrain);
  ASSERT_TRUE(queue_->claim("w1", kLongLease).is_ok());
  EXPECT_EQ(queue_->finish(job.id, "w1", JobOutcome::success(version->version + 100)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(queue_->get(job.id)->state, JobState::kRunning);  // nothing recorded
  ASSERT_TRUE(queue_->finish(job.id, "w1", JobOutcome::success(version->version)).is_ok());
  auto done = queue_->get(job.id);
  EXPECT_EQ(done->state, JobState::kSucceeded);
  EXPECT_EQ(done->result_version, version->version);
  EXPECT_EQ(done->error, "");
  EXPECT_TRUE(queue_->finish(job.id, "w1", JobOutcome::success(version->version)).is_ok());  // retry
}

TEST_F(JobQueueTest, OneDistillJobRunsAtATime) {
  Job d1 = enqueue(JobKind::kDistill);
  Job d2 = enqueue(JobKind::kDistill, gpu_);
  Job t1 = enqueue(JobKind::kTrain);

  EXPECT_EQ(queue_->claim("a", kLongLease)->id, d1.id);
  EXPECT_EQ(queue_->claim("b", kLongLease)->id, t1.id);  // d2 waits for d1
  EXPECT_EQ(queue_->claim("c", kLongLease).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(queue_->finish(d1.id, "a", JobOutcome::success(std::nullopt)).is_ok());
  EXPECT_EQ(queue_->claim("c", kLongLease)->id, d2.id);
}

TEST_F(JobQueueTest, ExpiredDistillJobIsReclaimedBeforeAQueuedOne) {
  Job d1 = enqueue(JobKind::kDistill);
  Job d2 = enqueue(JobKind::kDistill);
  ASSERT_EQ(queue_->claim("a", kShortLease)->id, d1.id);
  std::this_thread::sleep_for(kPastLease);
  auto again = queue_->claim("b", kLongLease);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->id, d1.id);
  EXPECT_EQ(again->attempts, 2);
  EXPECT_EQ(queue_->claim("c", kLongLease).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(queue_->get(d2.id)->state, JobState::kQueued);
}

// Two claimers each take a different queued distill job at the same instant:
// the unique index refuses the second, which then takes a train job instead.
TEST_F(JobQueueTest, SimultaneousDistillClaimsFallBackToOtherJobs) {
  Job d1 = enqueue(JobKind::kDistill);
  Job d2 = enqueue(JobKind::kDistill);
  Job t1 = enqueue(JobKind::kTrain);

  // Worker "raw" claims d1 and has not committed yet.
  pqxx::connection raw(url_);
  pqxx::work raw_tx(raw);
  raw_tx.exec0(
      "UPDATE training_jobs SET state = 'running', worker = 'raw', attempts = 1, started_at = now(), "
      "lease_expires_at = now() + interval '1 hour' WHERE id = " +
      std::to_string(d1.id));

  // d1 is locked (skipped); d2 looks free, but marking it running waits on
  // raw's index entry.
  auto claim = std::async(std::launch::async, [&] { return queue_->claim("w2", kLongLease); });
  EXPECT_EQ(claim.wait_for(300ms), std::future_status::timeout);
  raw_tx.commit();

  auto got = claim.get();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got->id, t1.id);
  EXPECT_EQ(queue_->get(d2.id)->state, JobState::kQueued);
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM training_jobs WHERE kind = 'distill' AND state = 'running'"), "1");
}

TEST_F(JobQueueTest, CountsByStateCoverEveryState) {
  Job a = enqueue(JobKind::kTrain);
  enqueue(JobKind::kTrain);
  Job c = enqueue(JobKind::kTrain);
  enqueue(JobKind::kTrain);
  ASSERT_EQ(queue_->claim("w1", kLongLease)->id, a.id);
  ASSERT_TRUE(queue_->finish(a.id, "w1", JobOutcome::success(std::nullopt)).is_ok());
  ASSERT_TRUE(queue_->cancel(c.id).is_ok());
  ASSERT_TRUE(queue_->claim("w1", kLongLease).is_ok());

  auto counts = queue_->counts_by_state();
  ASSERT_TRUE(counts.is_ok()) << counts.status().to_string();
  ASSERT_EQ(counts->size(), kAllJobStates.size());
  std::string seen;
  for (const JobStateCount& n : *counts) {
    seen += std::string(job_state_name(n.state)) + "=" + std::to_string(n.count) + " ";
  }
  EXPECT_EQ(seen, "queued=1 running=1 succeeded=1 failed=0 cancelled=1 ");
}

TEST_F(JobQueueTest, DatabaseDownIsUnavailable) {
  Job job = enqueue(JobKind::kTrain);
  {
    testing::ClusterRestartGuard guard;
    PgCluster::shared().stop();
    EXPECT_EQ(queue_->claim("w1", kLongLease).status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(queue_->heartbeat(job.id, "w1", kLongLease, "").code(), StatusCode::kUnavailable);
    EXPECT_EQ(queue_->counts_by_state().status().code(), StatusCode::kUnavailable);
  }
  EXPECT_EQ(queue_->claim("w1", kLongLease)->id, job.id);
}

}  // namespace
}  // namespace tcl::registry
