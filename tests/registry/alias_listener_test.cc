#include "registry/alias_listener.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "registry/model_store.h"
#include "tests/registry/registry_test_env.h"

namespace tcl::registry {
namespace {

using namespace std::chrono_literals;
using tcl::testing::PgCluster;
using testing::exec_sql;
using Clock = std::chrono::steady_clock;

class AliasListenerTest : public testing::MigratedDbTest {
 protected:
  void SetUp() override {
    MigratedDbTest::SetUp();
    if (HasFatalFailure()) return;
    add_platform("cpu");
    if (HasFailure()) return;
    store_ = std::make_unique<ModelStore>(*pool_);
    for (int i = 0; i < 2; ++i) {
      NewVersion v;
      v.platforms = {"cpu"};
      v.weights = "weights " + std::to_string(i);
      auto created = store_->create_version(v);
      ASSERT_TRUE(created.is_ok()) << created.status().to_string();
      versions_.push_back(created->version);
    }
    AliasListenerOptions options;
    options.url = url_;
    options.reconnect_interval = 50ms;
    listener_ = std::make_unique<AliasListener>(
        options, [this](const AliasChange& c) { changes_.push_back(c); }, [this] { ++resyncs_; });
  }

  // Waits (up to 10 s) until `n` changes arrived.
  void wait_for_changes(std::size_t n) {
    const auto deadline = Clock::now() + 10s;
    while (changes_.size() < n && Clock::now() < deadline) (void)listener_->wait(200ms);
    ASSERT_EQ(changes_.size(), n);
  }

  std::unique_ptr<ModelStore> store_;
  std::vector<std::int64_t> versions_;
  std::unique_ptr<AliasListener> listener_;
  std::vector<AliasChange> changes_;
  int resyncs_ = 0;
};

TEST_F(AliasListenerTest, SetAliasFromAnotherConnectionReachesTheListener) {
  EXPECT_FALSE(listener_->connected());
  auto first = listener_->wait(0ms);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ(*first, 0);
  EXPECT_TRUE(listener_->connected());
  EXPECT_EQ(resyncs_, 1);  // the first LISTEN asks for a full load

  ASSERT_TRUE(store_->set_alias("production", versions_[0], "ops", "").is_ok());
  wait_for_changes(1);
  EXPECT_EQ(changes_[0].alias, "production");
  EXPECT_EQ(changes_[0].version, versions_[0]);

  ASSERT_TRUE(store_->set_alias("production", versions_[1], "ops", "").is_ok());
  ASSERT_TRUE(store_->set_alias("canary", versions_[0], "ops", "").is_ok());
  wait_for_changes(3);
  EXPECT_EQ(changes_[1].alias, "production");
  EXPECT_EQ(changes_[1].version, versions_[1]);
  EXPECT_EQ(changes_[2].alias, "canary");

  // No move, no notification; the wait runs out its timeout.
  ASSERT_TRUE(store_->set_alias("production", versions_[1], "ops", "").is_ok());
  const auto start = Clock::now();
  auto quiet = listener_->wait(300ms);
  ASSERT_TRUE(quiet.is_ok());
  EXPECT_EQ(*quiet, 0);
  EXPECT_GE(Clock::now() - start, 290ms);
  EXPECT_EQ(resyncs_, 1);
}

TEST_F(AliasListenerTest, AMalformedPayloadAsksForAResync) {
  ASSERT_TRUE(listener_->wait(0ms).is_ok());
  ASSERT_EQ(resyncs_, 1);
  exec_sql(url_, "NOTIFY tcl_alias_changed, 'not json'");
  const auto deadline = Clock::now() + 10s;
  while (resyncs_ < 2 && Clock::now() < deadline) (void)listener_->wait(200ms);
  EXPECT_EQ(resyncs_, 2);
  EXPECT_TRUE(changes_.empty());
}

TEST_F(AliasListenerTest, ReconnectsAfterTheServerRestarts) {
  ASSERT_TRUE(listener_->wait(0ms).is_ok());
  ASSERT_TRUE(listener_->connected());
  {
    testing::ClusterRestartGuard guard;
    PgCluster::shared().stop();
    // Down: wait() reports it, and takes its whole timeout doing so.
    const auto start = Clock::now();
    auto down = listener_->wait(300ms);
    ASSERT_FALSE(down.is_ok());
    EXPECT_EQ(down.status().code(), StatusCode::kUnavailable);
    EXPECT_GE(Clock::now() - start, 250ms);
    EXPECT_FALSE(listener_->connected());
    EXPECT_EQ(listener_->wait(100ms).status().code(), StatusCode::kUnavailable);
    PgCluster::shared().start();
  }
  // Back: the listener reconnects by itself and asks for a resync (moves made
  // while it was away were not heard).
  const auto deadline = Clock::now() + 10s;
  while (!listener_->connected() && Clock::now() < deadline) (void)listener_->wait(100ms);
  ASSERT_TRUE(listener_->connected());
  EXPECT_EQ(resyncs_, 2);

  ASSERT_TRUE(store_->set_alias("production", versions_[1], "ops", "after restart").is_ok());
  wait_for_changes(1);
  EXPECT_EQ(changes_[0].version, versions_[1]);
}

TEST_F(AliasListenerTest, AnUnreachableServerIsUnavailable) {
  AliasListenerOptions options;
  options.url = PgCluster::shared().url("no_such_database_here");
  options.reconnect_interval = 20ms;
  int calls = 0;
  AliasListener nowhere(
      options, [&](const AliasChange&) { ++calls; }, [&] { ++calls; });
  const auto start = Clock::now();
  auto r = nowhere.wait(100ms);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_GE(Clock::now() - start, 90ms);
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace tcl::registry
