#include "registry/platform_store.h"

#include <gtest/gtest.h>

#include <regex>

#include "tests/registry/registry_test_env.h"

namespace tcl::registry {
namespace {

using testing::exec_sql;
using tcl::testing::PgCluster;

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
  exec_sql(url_, "INSERT INTO measurements (platform_id, program_id, upload_id, costs, error_no, all_cost, "
                 "timestamp, record, dedup_key) "
                 "SELECT *, tcl_measurement_dedup_key(platform_id, program_id, timestamp, costs) FROM (VALUES "
                 "(" + p + ", 'aaaaaaaaaaaaaaaa', 1, '{0.001,0.002}'::float8[], 0, 1.5, 100, 'line a1'),"
                 "(" + p + ", 'aaaaaaaaaaaaaaaa', 1, '{0.003}', 0, 1.5, 101, 'line a2'),"
                 "(" + p + ", 'aaaaaaaaaaaaaaaa', 1, '{1e10}', 4, 1.5, 102, 'line a3'),"
                 "(" + p + ", 'bbbbbbbbbbbbbbbb', 1, '{0.001,0}', 0, 1.5, 103, 'line b1'),"
                 "(" + o + ", 'dddddddddddddddd', 3, '{0.001}', 0, 1.5, 104, 'line d1')"
                 ") AS v (platform_id, program_id, upload_id, costs, error_no, all_cost, timestamp, record)");
  exec_sql(url_, "INSERT INTO candidates (platform_id, program_id, upload_id, record) VALUES "
                 "(" + p + ", 'cccccccccccccccc', 2, 'cand c'), (" + p + ", 'aaaaaaaaaaaaaaaa', 2, 'cand a')");

  auto got = store_->get("cpu");
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got->counts.programs, 3);  // a, b, c
  EXPECT_EQ(got->counts.tasks, 2);     // t1 (a, b), t2 (c)
  EXPECT_EQ(got->counts.measurements, 2);
  EXPECT_EQ(got->counts.failed, 2);
  EXPECT_EQ(got->counts.candidates, 2);

  auto got_other = store_->get("other");
  ASSERT_TRUE(got_other.is_ok());
  EXPECT_EQ(got_other->counts.programs, 1);
  EXPECT_EQ(got_other->counts.tasks, 1);
  EXPECT_EQ(got_other->counts.measurements, 1);
  EXPECT_EQ(got_other->counts.failed, 0);
  EXPECT_EQ(got_other->counts.candidates, 0);

  // list() leaves counts at zero (it is the cheap call).
  auto all = store_->list();
  ASSERT_TRUE(all.is_ok());
  EXPECT_EQ((*all)[0].counts.measurements, 0);
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

}  // namespace
}  // namespace tcl::registry
