// tests/registry/tuning_run_store_test.cc — registry/tuning_run_store.h against
// a real PostgreSQL: a run stored with its rounds, the same id replaced whole
// (created_at kept, the rounds of the new body only), runs per platform, and
// what is refused.
#include "registry/tuning_run_store.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "tests/registry/registry_test_env.h"

namespace tcl::registry {
namespace {

class TuningRunStoreTest : public testing::MigratedDbTest {
 protected:
  void SetUp() override {
    MigratedDbTest::SetUp();
    if (HasFatalFailure()) return;
    cpu_ = add_platform("cpu");
    gpu_ = add_platform("gpu");
    if (HasFailure()) return;
    store_ = std::make_unique<TuningRunStore>(*pool_);
  }
  static TuningRun run(std::string id, int rounds) {
    TuningRun r;
    r.id = std::move(id);
    r.network = "resnet50";
    r.model = "lineage+online";
    r.seed = 3;
    for (int i = 0; i < rounds; ++i) {
      r.rounds.push_back({.measured = 16 * (i + 1),
                          .network_seconds = i == 0 ? std::nullopt : std::optional<double>(0.01 / i),
                          .wall_seconds = 2.5 * (i + 1)});
    }
    return r;
  }
  std::int64_t cpu_ = 0, gpu_ = 0;
  std::unique_ptr<TuningRunStore> store_;
};

TEST_F(TuningRunStoreTest, PutStoresTheRunAndTheSameIdReplacesIt) {
  bool created = false;
  auto first = store_->put(cpu_, run("tune-abc", 2), &created);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_TRUE(created);
  ASSERT_EQ(first->rounds.size(), 2u);
  EXPECT_FALSE(first->rounds[0].network_seconds.has_value());
  EXPECT_DOUBLE_EQ(*first->rounds[1].network_seconds, 0.01);
  EXPECT_EQ(first->rounds[1].measured, 32);
  EXPECT_DOUBLE_EQ(first->rounds[1].wall_seconds, 5.0);
  EXPECT_EQ(first->seed, 3);
  EXPECT_FALSE(first->created_at.empty());

  TuningRun resumed = run("tune-abc", 3);
  resumed.model = "online";
  auto second = store_->put(cpu_, resumed, &created);
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_FALSE(created);
  EXPECT_EQ(second->created_at, first->created_at);
  EXPECT_EQ(second->rounds.size(), 3u);
  EXPECT_EQ(second->model, "online");
  ASSERT_TRUE(store_->put(gpu_, run("tune-abc", 1), &created).is_ok());  // the same id on another platform
  EXPECT_TRUE(created);

  auto cpu_runs = store_->list(cpu_);
  ASSERT_TRUE(cpu_runs.is_ok()) << cpu_runs.status().to_string();
  ASSERT_EQ(cpu_runs->size(), 1u);
  EXPECT_EQ(cpu_runs->at(0).rounds.size(), 3u);
  EXPECT_EQ(store_->list(gpu_)->at(0).rounds.size(), 1u);
}

TEST_F(TuningRunStoreTest, RefusesBadIdsNumbersAndPlatforms) {
  bool created = false;
  EXPECT_EQ(store_->put(cpu_, run("-x", 1), &created).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->put(cpu_, run("a b", 1), &created).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->put(cpu_, run(std::string(129, 'a'), 1), &created).status().code(), StatusCode::kInvalidArgument);
  TuningRun inf = run("inf", 1);
  inf.rounds[0].wall_seconds = INFINITY;
  EXPECT_EQ(store_->put(cpu_, inf, &created).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->put(gpu_ + 100, run("ok", 1), &created).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->list(cpu_)->empty());
  EXPECT_TRUE(is_valid_tuning_run_id("tune-0123456789abcdef"));
  EXPECT_TRUE(is_valid_tuning_run_id(std::string(128, 'a')));
}

}  // namespace
}  // namespace tcl::registry
