#include "registry/platform_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <thread>
#include <utility>

#include "core/sha256.h"
#include "registry/upload_store.h"
#include "tests/registry/registry_test_env.h"

namespace tcl::registry {
namespace {

using namespace std::chrono_literals;
using tcl::testing::PgCluster;
using testing::exec_sql;
using testing::query_text;
using testing::UploadLockHolder;

NewPlatform new_platform(const std::string& name) {
  NewPlatform p;
  p.name = name;
  p.target = "llvm -keys=cpu -mcpu=skylake-avx512";
  p.hardware_params = {20, 64, 64, 0, 0, 0, 0, 0};
  p.description = "Intel Xeon, 20 cores";
  return p;
}

class PlatformStoreTest : public testing::MigratedDbTest {
 protected:
  void SetUp() override {
    MigratedDbTest::SetUp();
    store_ = std::make_unique<PlatformStore>(*pool_);
  }
  std::unique_ptr<PlatformStore> store_;
};

TEST_F(PlatformStoreTest, CreateGetList) {
  auto created = store_->create(new_platform("xeon-8272"));
  ASSERT_TRUE(created.is_ok()) << created.status().to_string();
  EXPECT_GT(created->id, 0);
  EXPECT_EQ(created->name, "xeon-8272");
  EXPECT_EQ(created->target, "llvm -keys=cpu -mcpu=skylake-avx512");
  EXPECT_EQ(created->hardware_params, (std::array<std::int64_t, 8>{20, 64, 64, 0, 0, 0, 0, 0}));
  EXPECT_EQ(created->description, "Intel Xeon, 20 cores");
  EXPECT_TRUE(std::regex_match(created->created_at, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << created->created_at;

  NewPlatform gpu = new_platform("a100");
  gpu.target = "cuda -keys=cuda,gpu -arch=sm_80";
  gpu.hardware_params = {-1, 16, 64, 49152, 2147483647, 1024, 8, 32};
  gpu.description = "";
  auto created_gpu = store_->create(gpu);
  ASSERT_TRUE(created_gpu.is_ok()) << created_gpu.status().to_string();

  auto got = store_->get("xeon-8272");
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got->id, created->id);
  EXPECT_EQ(got->hardware_params, created->hardware_params);
  EXPECT_EQ(got->created_at, created->created_at);
  EXPECT_EQ(got->counts.programs, 0);
  EXPECT_EQ(got->counts.tasks, 0);
  EXPECT_EQ(got->counts.measurements, 0);
  EXPECT_EQ(got->counts.failed, 0);
  EXPECT_EQ(got->counts.candidates, 0);

  auto got_gpu = store_->get("a100");
  ASSERT_TRUE(got_gpu.is_ok());
  EXPECT_EQ(got_gpu->hardware_params, gpu.hardware_params);
  // The stored row as the one core::Platform (what models are conditioned on).
  const core::Platform hw = core_platform(*got_gpu);
  EXPECT_EQ(hw.target, gpu.target);
  ASSERT_TRUE(hw.hardware.has_value());
  EXPECT_EQ(hw.hardware->max_shared_memory_per_block, 49152);
  EXPECT_EQ(hw.hardware->warp_size, 32);
  EXPECT_EQ(got_gpu->description, "");

  auto all = store_->list();
  ASSERT_TRUE(all.is_ok()) << all.status().to_string();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, "xeon-8272");  // creation order
  EXPECT_EQ((*all)[1].name, "a100");
  EXPECT_EQ((*all)[1].target, gpu.target);
}

TEST_F(PlatformStoreTest, ListOfNoPlatformsIsEmpty) {
  auto all = store_->list();
  ASSERT_TRUE(all.is_ok()) << all.status().to_string();
  EXPECT_TRUE(all->empty());
}

TEST_F(PlatformStoreTest, DuplicateNameIsAlreadyExists) {
  ASSERT_TRUE(store_->create(new_platform("arm-a72")).is_ok());
  auto dup = store_->create(new_platform("arm-a72"));
  ASSERT_FALSE(dup.is_ok());
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(dup.status().message().find("arm-a72"), std::string::npos);
  EXPECT_EQ(store_->list()->size(), 1u);
}

TEST_F(PlatformStoreTest, UnknownNameIsNotFound) {
  auto got = store_->get("nope");
  ASSERT_FALSE(got.is_ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_NE(got.status().message().find("nope"), std::string::npos);
}

TEST_F(PlatformStoreTest, NameTheCallerFailedToValidateIsRejectedByTheSchema) {
  auto bad = store_->create(new_platform("Bad Name; DROP TABLE platforms"));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status().to_string();
  EXPECT_TRUE(store_->list().is_ok());
}

TEST_F(PlatformStoreTest, GetCountsProgramsTasksMeasurementsFailuresAndCandidates) {
  auto cpu = store_->create(new_platform("cpu"));
  auto other = store_->create(new_platform("other"));
  ASSERT_TRUE(cpu.is_ok() && other.is_ok());
  const std::string p = std::to_string(cpu->id);
  const std::string o = std::to_string(other->id);
  exec_sql(url_, R"sql(
    INSERT INTO tasks (workload_key) VALUES ('["t1"]'), ('["t2"]'), ('["t3"]');
    INSERT INTO programs (id, task_id) VALUES
      ('aaaaaaaaaaaaaaaa', 1), ('bbbbbbbbbbbbbbbb', 1),
      ('cccccccccccccccc', 2), ('dddddddddddddddd', 3);
  )sql");
  exec_sql(url_, "INSERT INTO uploads (platform_id, kind, body_sha256) VALUES (" + p +
                     ", 'measurements', repeat('a', 64)), (" + p + ", 'candidates', repeat('b', 64)), (" + o +
                     ", 'measurements', repeat('c', 64))");
  // cpu: program a measured twice (ok) and once failed (error_no), b measured
  // with a zero cost (failed); c and a in the candidate pool. other: d.
  exec_sql(url_,
           "INSERT INTO measurements (platform_id, program_id, upload_id, costs, error_no, all_cost, "
           "timestamp, record, dedup_key) "
           "SELECT *, tcl_measurement_dedup_key(platform_id, program_id, timestamp, costs) FROM (VALUES "
           "(" +
               p +
               ", 'aaaaaaaaaaaaaaaa', 1, '{0.001,0.002}'::float8[], 0, 1.5, 100, 'line a1'),"
               "(" +
               p +
               ", 'aaaaaaaaaaaaaaaa', 1, '{0.003}', 0, 1.5, 101, 'line a2'),"
               "(" +
               p +
               ", 'aaaaaaaaaaaaaaaa', 1, '{1e10}', 4, 1.5, 102, 'line a3'),"
               "(" +
               p +
               ", 'bbbbbbbbbbbbbbbb', 1, '{0.001,0}', 0, 1.5, 103, 'line b1'),"
               "(" +
               o +
               ", 'dddddddddddddddd', 3, '{0.001}', 0, 1.5, 104, 'line d1')"
               ") AS v (platform_id, program_id, upload_id, costs, error_no, all_cost, timestamp, record)");
  exec_sql(url_,
           "INSERT INTO candidates (platform_id, program_id, upload_id, record) VALUES "
           "(" +
               p + ", 'cccccccccccccccc', 2, 'cand c'), (" + p + ", 'aaaaaaaaaaaaaaaa', 2, 'cand a')");

  auto got = store_->get("cpu");
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got->counts.programs, 3);  // a, b, c
  EXPECT_EQ(got->counts.tasks, 2);     // t1 (a, b), t2 (c)
  EXPECT_EQ(got->counts.measurements, 2);
  EXPECT_EQ(got->counts.failed, 2);
  EXPECT_EQ(got->counts.candidates, 2);

  auto recounted = store_->recount(cpu->id);
  ASSERT_TRUE(recounted.is_ok()) << recounted.status().to_string();
  EXPECT_EQ(recounted->programs, 3);
  EXPECT_EQ(recounted->tasks, 2);
  EXPECT_EQ(recounted->measurements, 2);
  EXPECT_EQ(recounted->failed, 2);
  EXPECT_EQ(recounted->candidates, 2);

  auto got_other = store_->get("other");
  ASSERT_TRUE(got_other.is_ok());
  EXPECT_EQ(got_other->counts.programs, 1);
  EXPECT_EQ(got_other->counts.tasks, 1);
  EXPECT_EQ(got_other->counts.measurements, 1);
  EXPECT_EQ(got_other->counts.failed, 0);
  EXPECT_EQ(got_other->counts.candidates, 0);

  // list() leaves counts at zero (it is the cheap call); list(true) reads them as get() does.
  auto all = store_->list();
  ASSERT_TRUE(all.is_ok());
  EXPECT_EQ((*all)[0].counts.measurements, 0);
  auto counted = store_->list(/*with_counts=*/true);
  ASSERT_TRUE(counted.is_ok()) << counted.status().to_string();
  ASSERT_EQ(counted->size(), 2u);
  EXPECT_EQ((*counted)[0].name, "cpu");
  EXPECT_EQ((*counted)[0].counts.programs, 3);
  EXPECT_EQ((*counted)[0].counts.failed, 2);
  EXPECT_EQ((*counted)[0].counts.candidates, 2);
  EXPECT_EQ((*counted)[1].counts.measurements, 1);
}

TEST_F(PlatformStoreTest, RowsChangedOutsideTheUploadStoreAreRecounted) {
  // The test above wrote its rows with plain SQL; so does this one, and a
  // DELETE: migrations/0007's trigger recounts after any such statement.
  auto cpu = store_->create(new_platform("cpu"));
  ASSERT_TRUE(cpu.is_ok());
  const std::string p = std::to_string(cpu->id);
  exec_sql(url_,
           "INSERT INTO tasks (workload_key) VALUES ('[\"t1\"]');"
           "INSERT INTO programs (id, task_id) VALUES ('aaaaaaaaaaaaaaaa', 1), ('bbbbbbbbbbbbbbbb', 1);"
           "INSERT INTO uploads (platform_id, kind, body_sha256) VALUES (" +
               p + ", 'candidates', repeat('a', 64))");
  exec_sql(url_,
           "INSERT INTO candidates (platform_id, program_id, upload_id, record) VALUES "
           "(" +
               p + ", 'aaaaaaaaaaaaaaaa', 1, 'a'), (" + p + ", 'bbbbbbbbbbbbbbbb', 1, 'b')");
  EXPECT_EQ(store_->get("cpu")->counts.candidates, 2);
  EXPECT_EQ(store_->get("cpu")->counts.programs, 2);
  exec_sql(url_, "DELETE FROM candidates WHERE program_id = 'aaaaaaaaaaaaaaaa'");
  auto got = store_->get("cpu");
  ASSERT_TRUE(got.is_ok());
  EXPECT_EQ(got->counts.candidates, 1);
  EXPECT_EQ(got->counts.programs, 1);
  EXPECT_EQ(got->counts.tasks, 1);
  exec_sql(url_, "TRUNCATE candidates");
  EXPECT_EQ(store_->get("cpu")->counts.programs, 0);
  EXPECT_EQ(store_->get("cpu")->counts.tasks, 0);
}

TEST_F(PlatformStoreTest, DatabaseDownIsUnavailable) {
  ASSERT_TRUE(store_->create(new_platform("cpu")).is_ok());
  {
    testing::ClusterRestartGuard guard;
    PgCluster::shared().stop();
    EXPECT_EQ(store_->get("cpu").status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(store_->list().status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(store_->create(new_platform("gpu")).status().code(), StatusCode::kUnavailable);
  }
  // Back without restarting anything on our side.
  auto got = store_->get("cpu");
  EXPECT_TRUE(got.is_ok()) << got.status().to_string();
}

// --- Counts kept by UploadStore (migrations/0007) -----------------------------
//
// Every scenario checks get()'s kept counts against recount() (the rows
// counted again) and against numbers worked out by hand.

// A row of task `task` and program `program` (equal numbers, equal program).
UploadRow row(int task, int program, std::int64_t timestamp, std::vector<double> costs, std::int32_t error_no = 0) {
  UploadRow r;
  r.workload_key = "[\"task" + std::to_string(task) + "\",[1,64,56,56]]";
  const std::string steps = "[[\"SP\",2,0,1024,[" + std::to_string(program) + ",4],1]]";
  r.program_id = sha256_hex(r.workload_key + "\n" + steps);
  r.costs = std::move(costs);
  r.error_no = error_no;
  r.all_cost = 0.25;
  r.timestamp = timestamp;
  r.record = "{\"i\": [[" + r.workload_key + "], [[], " + steps + "]], \"r\": [" + std::to_string(timestamp) + "]}";
  return r;
}

UploadRow candidate(int task, int program) { return row(task, program, 0, {}); }

std::string counts_text(const PlatformCounts& c) {
  return "programs=" + std::to_string(c.programs) + " tasks=" + std::to_string(c.tasks) +
         " measurements=" + std::to_string(c.measurements) + " failed=" + std::to_string(c.failed) +
         " candidates=" + std::to_string(c.candidates);
}

std::string counts_text(std::int64_t programs, std::int64_t tasks, std::int64_t measurements, std::int64_t failed,
                        std::int64_t candidates) {
  return counts_text(PlatformCounts{programs, tasks, measurements, failed, candidates});
}

auto no_report() {
  return [](std::int64_t, const UploadCounts&) { return std::string("{}"); };
}

class PlatformCountsTest : public testing::MigratedDbTest {
 protected:
  void SetUp() override {
    MigratedDbTest::SetUp();
    platforms_ = std::make_unique<PlatformStore>(*pool_);
    uploads_ = std::make_unique<UploadStore>(*pool_);
    for (const char* name : {"cpu", "gpu"}) {
      auto created = platforms_->create(new_platform(name));
      ASSERT_TRUE(created.is_ok()) << created.status().to_string();
      (std::string(name) == "cpu" ? cpu_ : gpu_) = created->id;
    }
  }

  // Uploads `rows` in one writer; fails the test on any error.
  CommittedUpload upload(std::int64_t platform, UploadKind kind, const std::vector<UploadRow>& rows,
                         const std::string& key, const std::string& body) {
    auto writer = uploads_->begin(platform, kind);
    EXPECT_TRUE(writer.is_ok()) << writer.status().to_string();
    if (!writer) return {};
    for (const UploadRow& r : rows) EXPECT_TRUE((*writer)->add(r).is_ok());
    auto done = (*writer)->commit(key, sha256_hex(body), no_report());
    EXPECT_TRUE(done.is_ok()) << done.status().to_string();
    return done ? *done : CommittedUpload{};
  }

  // get()'s counts of `name` as text, after checking they equal a recount.
  std::string kept(const std::string& name) {
    auto got = platforms_->get(name);
    EXPECT_TRUE(got.is_ok()) << got.status().to_string();
    if (!got) return "";
    auto recounted = platforms_->recount(got->id);
    EXPECT_TRUE(recounted.is_ok()) << recounted.status().to_string();
    if (recounted) {
      EXPECT_EQ(counts_text(got->counts), counts_text(*recounted)) << "kept (left) vs recount (right)";
    }
    return counts_text(got->counts);
  }

  std::unique_ptr<PlatformStore> platforms_;
  std::unique_ptr<UploadStore> uploads_;
  std::int64_t cpu_ = 0;
  std::int64_t gpu_ = 0;
};

TEST_F(PlatformCountsTest, DuplicatesWithinAndAcrossUploadsCountOnce) {
  const UploadRow a = row(1, 1, 1600000000, {0.5});
  const UploadRow b = row(1, 2, 1600000000, {0.5});
  UploadRow a_rerun = a;  // the same program measured again: a new measurement, not a new program
  a_rerun.timestamp += 60;
  upload(cpu_, UploadKind::kMeasurements, {a, b, a, a_rerun}, "", "1");
  EXPECT_EQ(kept("cpu"), counts_text(2, 1, 3, 0, 0));
  upload(cpu_, UploadKind::kMeasurements, {b, a, row(2, 3, 1600000000, {0.25})}, "", "2");
  EXPECT_EQ(kept("cpu"), counts_text(3, 2, 4, 0, 0));

  // Several slices: 500 programs (one of them is a) measured 12 times each,
  // every 100th row repeated; each program is in many slices.
  std::vector<UploadRow> many;
  for (int i = 0; i < 6000; ++i) {
    many.push_back(row(i % 500 % 7, i % 500, 1700000000 + i, {1e-3}));
    if (i % 100 == 0) many.push_back(many.back());
  }
  upload(cpu_, UploadKind::kMeasurements, many, "", "many");
  EXPECT_EQ(kept("cpu"), counts_text(3 + 500 - 1, 7, 4 + 6000, 0, 0));
  upload(cpu_, UploadKind::kMeasurements, many, "", "many again, not a replay");  // all duplicates
  EXPECT_EQ(kept("cpu"), counts_text(502, 7, 6004, 0, 0));
  EXPECT_EQ(kept("gpu"), counts_text(0, 0, 0, 0, 0));
}

TEST_F(PlatformCountsTest, CandidatesThatGetMeasuredAreOneProgram) {
  upload(cpu_, UploadKind::kCandidates, {candidate(1, 1), candidate(1, 2), candidate(2, 3), candidate(1, 1)}, "", "c1");
  EXPECT_EQ(kept("cpu"), counts_text(3, 2, 0, 0, 3));
  // Two candidates measured, and one program never offered.
  upload(cpu_, UploadKind::kMeasurements, {row(1, 1, 1, {0.5}), row(2, 3, 1, {0.5}), row(3, 4, 1, {0.5})}, "", "m1");
  EXPECT_EQ(kept("cpu"), counts_text(4, 3, 3, 0, 3));
  // A measured program offered as a candidate afterwards.
  upload(cpu_, UploadKind::kCandidates, {candidate(3, 4), candidate(4, 5)}, "", "c2");
  EXPECT_EQ(kept("cpu"), counts_text(5, 4, 3, 0, 5));
  // The same programs are new to another platform, and do not touch cpu.
  upload(gpu_, UploadKind::kMeasurements, {row(1, 1, 1, {0.5})}, "", "m1");
  EXPECT_EQ(kept("gpu"), counts_text(1, 1, 1, 0, 0));
  EXPECT_EQ(kept("cpu"), counts_text(5, 4, 3, 0, 5));
  // Programs cpu stored first, offered to gpu and then measured there.
  upload(gpu_, UploadKind::kCandidates, {candidate(1, 2), candidate(2, 3)}, "", "c1");
  EXPECT_EQ(kept("gpu"), counts_text(3, 2, 1, 0, 2));
  upload(gpu_, UploadKind::kMeasurements, {row(1, 2, 1, {0.5}), row(2, 3, 1, {0.5}), row(1, 1, 2, {0.5})}, "", "m2");
  EXPECT_EQ(kept("gpu"), counts_text(3, 2, 4, 0, 2));
}

TEST_F(PlatformCountsTest, FailedMeasurementsAreCountedApart) {
  upload(cpu_, UploadKind::kMeasurements,
         {row(1, 1, 1, {0.5}), row(1, 2, 1, {0.5}, 4), row(1, 3, 1, {0.5, 0.0}), row(1, 4, 1, {-1.0}), row(1, 5, 1, {}),
          row(2, 6, 1, {1e9})},
         "", "1");
  EXPECT_EQ(kept("cpu"), counts_text(6, 2, 2, 4, 0));  // a failed program is still a program
  // A failed program measured again, successfully; failed rows repeated.
  upload(cpu_, UploadKind::kMeasurements, {row(1, 2, 2, {0.5}), row(1, 3, 1, {0.5, 0.0}), row(1, 5, 1, {})}, "", "2");
  EXPECT_EQ(kept("cpu"), counts_text(6, 2, 3, 4, 0));
}

TEST_F(PlatformCountsTest, ReplaysAddNothing) {
  const std::vector<UploadRow> rows = {row(1, 1, 1, {0.5}), row(1, 2, 1, {0.5}, 4), row(2, 3, 1, {0.5})};
  upload(cpu_, UploadKind::kMeasurements, rows, "k1", "b1");
  upload(cpu_, UploadKind::kCandidates, {candidate(3, 4)}, "", "c1");
  const std::string before = counts_text(4, 3, 2, 1, 1);
  EXPECT_EQ(kept("cpu"), before);
  EXPECT_TRUE(upload(cpu_, UploadKind::kMeasurements, rows, "k1", "b1").replayed);           // by key
  EXPECT_TRUE(upload(cpu_, UploadKind::kCandidates, {candidate(3, 4)}, "", "c1").replayed);  // by body
  EXPECT_EQ(kept("cpu"), before);

  // A retry that raced past find_previous(): its first slices are in the
  // tables (and the platform's programs) when commit() finds the replay.
  auto writer = uploads_->begin(cpu_, UploadKind::kMeasurements);
  ASSERT_TRUE(writer.is_ok());
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE((*writer)->add(row(5, 100 + i, 1, {0.5})).is_ok());
  auto replay = (*writer)->commit("k1", sha256_hex("b1"), no_report());
  ASSERT_TRUE(replay.is_ok()) << replay.status().to_string();
  EXPECT_TRUE(replay->replayed);
  writer->reset();
  EXPECT_EQ(kept("cpu"), before);

  // A reused key with another body is refused, and adds nothing either.
  auto reused = uploads_->begin(cpu_, UploadKind::kMeasurements);
  ASSERT_TRUE(reused.is_ok());
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE((*reused)->add(row(5, 100 + i, 1, {0.5})).is_ok());
  EXPECT_EQ((*reused)->commit("k1", sha256_hex("b2"), no_report()).status().code(), StatusCode::kFailedPrecondition);
  reused->reset();
  EXPECT_EQ(kept("cpu"), before);
}

// Upload locks (two-key advisory locks) of this test's database, granted or not.
std::string upload_locks(const std::string& url, bool granted) {
  return query_text(url, std::string("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 "
                                     "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                                     "AND ") +
                             (granted ? "granted" : "NOT granted"));
}

// Polls `done` every 10 ms for at most ~10 s; true when it came true.
bool eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// Rows of programs [first, last) (task i % 13) at timestamp `ts`; every
// 31st failed.
std::vector<UploadRow> range_rows(int first, int last, std::int64_t ts) {
  std::vector<UploadRow> rows;
  for (int i = first; i < last; ++i) rows.push_back(row(i % 13, i, ts, {1e-3}, i % 31 == 0 ? 7 : 0));
  return rows;
}
std::vector<UploadRow> range_candidates(int first, int last) {
  std::vector<UploadRow> rows;
  for (int i = first; i < last; ++i) rows.push_back(candidate(i % 13, i));
  return rows;
}
std::int64_t failed_in(int first, int last) {
  std::int64_t n = 0;
  for (int i = first; i < last; ++i) n += i % 31 == 0 ? 1 : 0;
  return n;
}

TEST_F(PlatformCountsTest, ConcurrentUploadsToOnePlatformAddUp) {
  // Another commit holds the upload lock (the test's, here) while A, B
  // (candidates) and C (measurements) of the same platform stage rows that
  // overlap each other's programs (their first 4352 rows are staged, the
  // rest written at commit); A's commit waits for the lock first, then B's
  // and C's, then all three commit. Programs 4000..5999 were stored before,
  // by gpu.
  upload(gpu_, UploadKind::kMeasurements, range_rows(4000, 6000, 3), "", "gpu first");
  UploadLockHolder committing(url_);
  auto a = uploads_->begin(cpu_, UploadKind::kMeasurements);
  ASSERT_TRUE(a.is_ok());
  for (const UploadRow& r : range_rows(0, 3000, 1)) ASSERT_TRUE((*a)->add(r).is_ok());
  std::optional<Result<CommittedUpload>> a_done;
  std::thread a_commit([&] { a_done.emplace((*a)->commit("", sha256_hex("a"), no_report())); });
  ASSERT_TRUE(eventually([&] { return upload_locks(url_, false) == "1"; })) << "A's commit did not wait for the lock";

  auto b = uploads_->begin(cpu_, UploadKind::kCandidates);
  auto c = uploads_->begin(cpu_, UploadKind::kMeasurements);
  ASSERT_TRUE(b.is_ok() && c.is_ok());
  for (const UploadRow& r : range_candidates(2000, 10000)) ASSERT_TRUE((*b)->add(r).is_ok());
  std::vector<UploadRow> c_rows = range_rows(2500, 3000, 1);                 // A's rows again: duplicates
  for (const UploadRow& r : range_rows(2500, 7500, 2)) c_rows.push_back(r);  // new runs, and new programs
  for (const UploadRow& r : c_rows) ASSERT_TRUE((*c)->add(r).is_ok());

  std::optional<Result<CommittedUpload>> b_done, c_done;
  std::thread b_commit([&] { b_done.emplace((*b)->commit("", sha256_hex("b"), no_report())); });
  std::thread c_commit([&] { c_done.emplace((*c)->commit("", sha256_hex("c"), no_report())); });
  EXPECT_TRUE(eventually([&] { return upload_locks(url_, false) == "3"; }))
      << "B's and C's commits did not wait for the lock";
  committing.release();
  a_commit.join();
  b_commit.join();
  c_commit.join();
  ASSERT_TRUE(a_done->is_ok()) << a_done->status().to_string();
  ASSERT_TRUE(b_done->is_ok()) << b_done->status().to_string();
  ASSERT_TRUE(c_done->is_ok()) << c_done->status().to_string();

  // Programs 0..9999; measurements: A's 3000 and C's 5000 new runs.
  const std::int64_t failed = failed_in(0, 3000) + failed_in(2500, 7500);
  EXPECT_EQ(kept("cpu"), counts_text(10000, 13, 8000 - failed, failed, 8000));
  EXPECT_EQ(kept("gpu"), counts_text(2000, 13, 2000 - failed_in(4000, 6000), failed_in(4000, 6000), 0));
}

TEST_F(PlatformCountsTest, ManyConcurrentUploadsOfBothKindsAddUp) {
  // Four writers per round on one platform, free-running, overlapping in
  // programs (and in rows, between rounds). Expected counts from sets.
  std::set<int> programs, measured_rows, candidates;
  std::int64_t failed = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<std::pair<UploadKind, std::vector<UploadRow>>> jobs;
    for (int w = 0; w < 4; ++w) {
      const int first = round * 700 + w * 400;
      const bool measure = (w + round) % 2 == 0;
      jobs.emplace_back(measure ? UploadKind::kMeasurements : UploadKind::kCandidates,
                        measure ? range_rows(first, first + 1500, 1) : range_candidates(first, first + 1500));
      for (int i = first; i < first + 1500; ++i) {
        programs.insert(i);
        if (!measure) candidates.insert(i);
        if (measure && measured_rows.insert(i).second) failed += i % 31 == 0 ? 1 : 0;
      }
    }
    std::vector<std::thread> threads;
    std::vector<Status> results(jobs.size());
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      threads.emplace_back([&, j] {
        auto w = uploads_->begin(cpu_, jobs[j].first);
        if (!w) return void(results[j] = w.status());
        for (const UploadRow& r : jobs[j].second) EXPECT_TRUE((*w)->add(r).is_ok());
        results[j] = (*w)->commit("", sha256_hex(std::to_string(round * 10 + j)), no_report()).status();
      });
    }
    for (auto& t : threads) t.join();
    for (const Status& s : results) ASSERT_TRUE(s.is_ok()) << s.to_string();
    const auto measured = static_cast<std::int64_t>(measured_rows.size());
    EXPECT_EQ(kept("cpu"), counts_text(static_cast<std::int64_t>(programs.size()), 13, measured - failed, failed,
                                       static_cast<std::int64_t>(candidates.size())))
        << "round " << round;
  }
}

// In a child process: uploads `rows` to `platform` without committing,
// says so on `ready`, then waits to be killed. Never returns.
[[noreturn]] void upload_and_hang(const std::string& url, std::int64_t platform, const std::vector<UploadRow>& rows,
                                  int ready) {
  auto pool = testing::make_pool(url, 1);
  UploadStore store(*pool);
  auto writer = store.begin(platform, UploadKind::kMeasurements);
  char status = writer.is_ok() ? 'k' : 'e';
  for (std::size_t i = 0; status == 'k' && i < rows.size(); ++i) status = (*writer)->add(rows[i]).is_ok() ? 'k' : 'e';
  if (write(ready, &status, 1) != 1) _exit(2);
  for (;;) pause();
}

TEST_F(PlatformCountsTest, KilledWriterProcessAddsNothing) {
  upload(cpu_, UploadKind::kMeasurements, range_rows(0, 2000, 1), "", "committed");
  upload(cpu_, UploadKind::kCandidates, range_candidates(0, 500), "", "pool");
  const std::int64_t f = failed_in(0, 2000);
  const std::string before = counts_text(2000, 13, 2000 - f, f, 500);
  ASSERT_EQ(kept("cpu"), before);

  // A process streams 9000 rows (new runs of known programs, and new
  // programs and tasks) into its open transaction and is killed -9.
  std::vector<UploadRow> rows = range_rows(1000, 10000, 2);
  rows.push_back(row(99, 99999, 2, {0.5}));
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) upload_and_hang(url_, cpu_, rows, pipe_fds[1]);
  char status = 0;
  ASSERT_EQ(read(pipe_fds[0], &status, 1), 1);
  EXPECT_EQ(status, 'k');
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  // Its slices are staged in its transaction (idle in it; no upload lock
  // taken before commit).
  const auto open_transactions = [&] {
    return query_text(url_,
                      "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                      "AND state = 'idle in transaction'");
  };
  EXPECT_TRUE(eventually([&] { return open_transactions() == "1"; }));
  EXPECT_EQ(upload_locks(url_, true), "0");
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFSIGNALED(wstatus));
  ASSERT_TRUE(eventually([&] { return open_transactions() == "0"; }))
      << "the killed writer's transaction is still open";
  EXPECT_EQ(kept("cpu"), before);

  // Nothing of it lingers: the same rows uploaded now all count.
  upload(cpu_, UploadKind::kMeasurements, rows, "", "after the crash");
  const std::int64_t f2 = f + failed_in(1000, 10000);
  EXPECT_EQ(kept("cpu"), counts_text(10001, 14, 2000 + 9001 - f2, f2, 500));
}

TEST_F(PlatformCountsTest, UploadsAddToTheKeptCountsWithoutRecounting) {
  upload(cpu_, UploadKind::kMeasurements, range_rows(0, 100, 1), "", "1");
  // Counts put off by hand stay off by as much after an upload: the upload
  // adds its own rows and reads no others (O(upload), not O(platform)).
  exec_sql(url_, "UPDATE platform_counts SET measurements = measurements + 1000, programs = programs + 7");
  upload(cpu_, UploadKind::kMeasurements, range_rows(100, 200, 1), "", "2");
  upload(cpu_, UploadKind::kCandidates, range_candidates(150, 250), "", "3");
  const std::int64_t f = failed_in(0, 200);
  auto got = platforms_->get("cpu");
  ASSERT_TRUE(got.is_ok());
  EXPECT_EQ(counts_text(got->counts), counts_text(250 + 7, 13, 200 - f + 1000, f, 100));
  // Any statement on the rows outside an upload recounts.
  exec_sql(url_, "DELETE FROM candidates WHERE false");
  EXPECT_EQ(kept("cpu"), counts_text(250, 13, 200 - f, f, 100));
}

TEST_F(PlatformCountsTest, RowsDeletedByHandAreRecountedAndLaterUploadsCountOn) {
  // cpu stores programs 0..149 first (100..149 as candidates only); gpu
  // measures 0..49, which it did not store first.
  upload(cpu_, UploadKind::kMeasurements, range_rows(0, 100, 1), "", "m");
  upload(cpu_, UploadKind::kCandidates, range_candidates(50, 150), "", "c");
  upload(gpu_, UploadKind::kMeasurements, range_rows(0, 50, 1), "", "m");
  const std::int64_t f = failed_in(0, 100);
  EXPECT_EQ(kept("cpu"), counts_text(150, 13, 100 - f, f, 100));
  EXPECT_EQ(kept("gpu"), counts_text(50, 13, 50 - failed_in(0, 50), failed_in(0, 50), 0));

  // By hand: cpu loses its measurements of programs 0..24 (which it stored
  // first), gpu all of its own.
  std::string ids;
  for (const UploadRow& r : range_rows(0, 25, 1)) ids += (ids.empty() ? "'" : ",'") + r.program_id + "'";
  exec_sql(url_,
           "DELETE FROM measurements WHERE platform_id = " + std::to_string(cpu_) + " AND program_id IN (" + ids + ")");
  exec_sql(url_, "DELETE FROM measurements WHERE platform_id = " + std::to_string(gpu_));
  const std::int64_t f2 = failed_in(25, 100);
  EXPECT_EQ(kept("cpu"), counts_text(125, 13, 75 - f2, f2, 100));
  EXPECT_EQ(kept("gpu"), counts_text(0, 0, 0, 0, 0));

  // Uploaded again, those programs are new to both platforms again.
  upload(cpu_, UploadKind::kMeasurements, range_rows(0, 50, 1), "", "m again");
  upload(gpu_, UploadKind::kMeasurements, range_rows(0, 50, 1), "", "m again");
  EXPECT_EQ(kept("cpu"), counts_text(150, 13, 100 - f, f, 100));
  EXPECT_EQ(kept("gpu"), counts_text(50, 13, 50 - failed_in(0, 50), failed_in(0, 50), 0));
}

}  // namespace
}  // namespace tcl::registry
