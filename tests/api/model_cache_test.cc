// tests/api/model_cache_test.cc — the versions /v1/predict answers from
// (api/model_cache.h), against a real PostgreSQL: lookup by number and by
// alias, the errors, an alias moved by NOTIFY or by resync, LRU eviction that
// never drops an aliased version, a held model that outlives eviction, and a
// version that keeps a per-platform adapter served per platform.
#include "api/model_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "registry/model_store.h"
#include "registry/platform_store.h"
#include "tests/lib/adapted_checkpoint.h"
#include "tests/lib/model_fixture.h"
#include "tests/lib/model_versions.h"
#include "tests/registry/registry_test_env.h"

namespace tcl::api {
namespace {

class ModelCacheTest : public registry::testing::MigratedDbTest {
 protected:
  void SetUp() override {
    MigratedDbTest::SetUp();
    registry::PlatformStore platforms(*pool_);
    registry::NewPlatform p;
    p.name = "x16";
    p.target = "llvm -keys=cpu";
    p.hardware_params = {16, 64, 64, 0, 0, 0, 0, 0};
    ASSERT_TRUE(platforms.create(p).is_ok());
    store_ = std::make_unique<registry::ModelStore>(*pool_);
  }

  std::int64_t add_version(const std::string& weights, bool production = false) {
    return tcl::testing::add_version(*store_, weights, {.production = production});
  }

  std::unique_ptr<registry::ModelStore> store_;
};

TEST_F(ModelCacheTest, LoadsByNumberAndByAliasOnce) {
  const std::int64_t v1 = add_version(tcl::testing::fresh_checkpoint(1), /*production=*/true);
  ModelCache cache(*store_, {});
  auto by_number = cache.get(std::to_string(v1));
  ASSERT_TRUE(by_number) << by_number.status().to_string();
  EXPECT_EQ((*by_number)->version, v1);
  EXPECT_EQ((*by_number)->platforms, std::vector<std::string>{"x16"});
  EXPECT_EQ((*by_number)->weights_sha256.size(), 64u);
  ASSERT_NE((*by_number)->model, nullptr);
  EXPECT_NE((*by_number)->fast, nullptr);  // the default student is a Mamba: fast path set

  auto by_alias = cache.get("production");  // not resynced: looked up in the database once
  ASSERT_TRUE(by_alias) << by_alias.status().to_string();
  EXPECT_EQ(by_alias->get(), by_number->get());  // the same loaded copy
  EXPECT_EQ(cache.alias_version("production"), v1);
  EXPECT_EQ(cache.loaded_count(), 1u);
}

TEST_F(ModelCacheTest, UnknownAliasOrVersionIsNotFound) {
  ModelCache cache(*store_, {});
  EXPECT_TRUE(cache.production_ready());  // no version at all yet
  EXPECT_EQ(cache.get("production").status().code(), StatusCode::kNotFound);
  EXPECT_NE(cache.get("production").status().message().find("no model version is in production yet"),
            std::string::npos);
  EXPECT_EQ(cache.get("staging").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(cache.get("42").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(cache.loaded_count(), 0u);
}

TEST_F(ModelCacheTest, WeightsThatDoNotLoadAreInternalAndNotCached) {
  const std::int64_t bad = add_version("these bytes are not a model");
  ModelCache cache(*store_, {});
  auto got = cache.get(std::to_string(bad));
  EXPECT_EQ(got.status().code(), StatusCode::kInternal);
  EXPECT_NE(got.status().message().find("does not load"), std::string::npos);
  EXPECT_EQ(cache.loaded_count(), 0u);
}

TEST_F(ModelCacheTest, AliasChangeLoadsTheVersionThenMovesTheAlias) {
  const std::int64_t v1 = add_version(tcl::testing::fresh_checkpoint(1), true);
  const std::int64_t v2 = add_version(tcl::testing::fresh_checkpoint(2));
  ModelCache cache(*store_, {});
  ASSERT_TRUE(cache.resync().is_ok());
  EXPECT_EQ(cache.alias_version("production"), v1);
  EXPECT_TRUE(cache.production_ready());
  EXPECT_EQ(cache.loaded_count(), 1u);  // resync loads what aliases point at

  cache.on_alias_change({"production", v2});
  EXPECT_EQ(cache.alias_version("production"), v2);
  EXPECT_TRUE(cache.production_ready());
  auto now = cache.get("production");
  ASSERT_TRUE(now);
  EXPECT_EQ((*now)->version, v2);
  EXPECT_EQ(cache.aliases().size(), 1u);
}

TEST_F(ModelCacheTest, AnAliasMovedToAVersionThatDoesNotLoadIsNotReady) {
  add_version(tcl::testing::fresh_checkpoint(1), true);
  const std::int64_t bad = add_version("garbage");
  ModelCache cache(*store_, {});
  ASSERT_TRUE(cache.resync().is_ok());
  cache.on_alias_change({"production", bad});  // moved anyway (see the header)
  EXPECT_EQ(cache.alias_version("production"), bad);
  EXPECT_FALSE(cache.production_ready());
  EXPECT_EQ(cache.get("production").status().code(), StatusCode::kInternal);
}

TEST_F(ModelCacheTest, ResyncRereadsAliasesFromTheDatabase) {
  const std::int64_t v1 = add_version(tcl::testing::fresh_checkpoint(1), true);
  const std::int64_t v2 = add_version(tcl::testing::fresh_checkpoint(2));
  ModelCache cache(*store_, {});
  ASSERT_TRUE(cache.resync().is_ok());
  ASSERT_TRUE(store_->set_alias("production", v2, "test", "moved while the listener was away").is_ok());
  ASSERT_TRUE(store_->set_alias("staging", v1, "test", "new alias").is_ok());
  EXPECT_EQ(cache.alias_version("production"), v1);  // no NOTIFY delivered here
  ASSERT_TRUE(cache.resync().is_ok());
  EXPECT_EQ(cache.alias_version("production"), v2);
  EXPECT_EQ(cache.alias_version("staging"), v1);
  EXPECT_EQ(cache.loaded_count(), 2u);
}

TEST_F(ModelCacheTest, EvictsTheLeastRecentlyUsedUnaliasedVersion) {
  const std::int64_t v1 = add_version(tcl::testing::fresh_checkpoint(1), true);
  const std::int64_t v2 = add_version(tcl::testing::fresh_checkpoint(2));
  const std::int64_t v3 = add_version(tcl::testing::fresh_checkpoint(3));
  const std::int64_t v4 = add_version(tcl::testing::fresh_checkpoint(4));
  ModelCacheOptions options;
  options.max_versions = 2;
  ModelCache cache(*store_, options);
  ASSERT_TRUE(cache.resync().is_ok());  // production → v1, loaded
  ASSERT_EQ(cache.alias_version("production"), v1);
  auto held = cache.get(std::to_string(v2));
  ASSERT_TRUE(held);
  ASSERT_TRUE(cache.get(std::to_string(v3)));  // over the limit: v2 (unaliased, oldest use) goes, v1 stays
  EXPECT_EQ(cache.loaded_count(), 2u);
  EXPECT_TRUE(cache.production_ready());
  EXPECT_EQ((*held)->version, v2);  // the request still holding v2 keeps its copy alive
  EXPECT_NE((*held)->model, nullptr);

  // v3 was used after v1, yet v1 is aliased: loading v4 drops v3.
  auto again3 = cache.get(std::to_string(v3));
  ASSERT_TRUE(cache.get(std::to_string(v4)));
  EXPECT_EQ(cache.loaded_count(), 2u);
  EXPECT_TRUE(cache.production_ready());
  // v3 loads afresh (a new copy): it had been evicted.
  auto reloaded3 = cache.get(std::to_string(v3));
  ASSERT_TRUE(reloaded3);
  EXPECT_NE(reloaded3->get(), again3->get());
  EXPECT_TRUE(cache.production_ready());
}

// With every other loaded model aliased, the one just loaded is kept (and
// returned alive), over the limit, until the next load; an aliased version's
// adapted platform stays like its trunk.
TEST_F(ModelCacheTest, TheModelJustLoadedIsNeverTheOneEvicted) {
  const std::string trunk = tcl::testing::fresh_checkpoint(1);
  const std::int64_t v1 = add_version(tcl::testing::with_adapter(trunk, "t4", 3), /*production=*/true);
  const std::int64_t v2 = add_version(tcl::testing::fresh_checkpoint(2));
  const std::int64_t v3 = add_version(tcl::testing::fresh_checkpoint(3));
  ModelCacheOptions options;
  options.max_versions = 1;
  ModelCache cache(*store_, options);
  ASSERT_TRUE(cache.resync().is_ok());  // production → v1's trunk
  auto adapted = cache.get("production", "t4");
  ASSERT_TRUE(adapted) << adapted.status().to_string();
  EXPECT_EQ((*adapted)->adapter_platform, "t4");
  auto second = cache.get(std::to_string(v2));
  ASSERT_TRUE(second) << second.status().to_string();
  EXPECT_EQ((*second)->version, v2);
  ASSERT_NE((*second)->model, nullptr);
  EXPECT_EQ(cache.loaded_count(), 3u);  // v1's trunk and t4 (aliased), and v2 (just loaded)
  auto third = cache.get(std::to_string(v3));
  ASSERT_TRUE(third);
  EXPECT_EQ((*third)->version, v3);
  EXPECT_EQ(cache.loaded_count(), 3u);                              // v2 went
  EXPECT_EQ(cache.get("production", "t4")->get(), adapted->get());  // still the loaded copy
  EXPECT_EQ(cache.alias_version("production"), v1);
}

// Scores of `m` on a fixed batch of 6 programs of 8 tokens (one descriptor for all).
std::vector<float> scores_of(const LoadedModel& m) {
  const int n = 6, L = 8;
  std::vector<float> tokens(static_cast<std::size_t>(n * L * core::kTokenDim));
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<float>((i * 7919) % 101) / 101.0f;
  const std::vector<std::int32_t> lengths(n, L);
  const std::vector<float> descriptor(core::kHardwareDim, 0.5f);
  trainer::FeatureBatch batch{
      .count = n, .seq_len = L, .tokens = tokens, .lengths = lengths, .descriptors = descriptor};
  std::vector<float> out(n);
  EXPECT_NE(m.fast, nullptr);
  if (m.fast) {
    EXPECT_TRUE(m.fast->predict(batch, out).is_ok());
  }
  return out;
}

TEST_F(ModelCacheTest, AnAdaptedPlatformGetsItsOwnModelAndOthersTheTrunk) {
  const std::string trunk = tcl::testing::fresh_checkpoint(1);
  const std::int64_t plain = add_version(trunk, /*production=*/true);
  const std::int64_t adapted = add_version(tcl::testing::with_adapter(trunk, "t4", 3));
  ModelCache cache(*store_, {});
  auto base = cache.get(std::to_string(adapted));  // no platform: the trunk
  ASSERT_TRUE(base) << base.status().to_string();
  EXPECT_EQ((*base)->adapter_platform, "");
  EXPECT_EQ((*base)->adapter_platforms, std::vector<std::string>{"t4"});
  auto x16 = cache.get(std::to_string(adapted), "x16");
  ASSERT_TRUE(x16);
  EXPECT_EQ(x16->get(), base->get());  // no adapter for x16: the trunk is its model
  auto t4 = cache.get(std::to_string(adapted), "t4");
  ASSERT_TRUE(t4) << t4.status().to_string();
  EXPECT_EQ((*t4)->adapter_platform, "t4");
  ASSERT_NE((*t4)->fast, nullptr);
  EXPECT_EQ(cache.get(std::to_string(adapted), "t4")->get(), t4->get());  // loaded once
  EXPECT_EQ(cache.loaded_count(), 2u);
  // The trunk scores as the plain version of the same weights; t4 otherwise.
  auto same = cache.get(std::to_string(plain), "t4");  // a version without adapters: one model for all
  ASSERT_TRUE(same);
  EXPECT_EQ((*same)->adapter_platform, "");
  EXPECT_EQ(scores_of(**base), scores_of(**same));
  EXPECT_NE(scores_of(**t4), scores_of(**base));
  EXPECT_EQ(cache.loaded_count(), 3u);
}

// An alias moved to a version that keeps adapters waits for every model of
// it: the trunk and each adapted platform's, so no platform's first request
// pays a load; resync does the same.
TEST_F(ModelCacheTest, AnAliasMoveLoadsEveryAdaptedPlatformBeforeItSwitches) {
  const std::string trunk = tcl::testing::fresh_checkpoint(1);
  add_version(trunk, /*production=*/true);
  const std::int64_t adapted =
      add_version(tcl::testing::with_adapter(tcl::testing::with_adapter(trunk, "t4", 3), "v100", 5));
  ModelCache cache(*store_, {});
  ASSERT_TRUE(cache.resync().is_ok());
  EXPECT_EQ(cache.loaded_count(), 1u);
  cache.on_alias_change({"production", adapted});
  EXPECT_EQ(cache.loaded_count(), 4u);  // the first version, and the trunk, t4 and v100 of the second
  EXPECT_TRUE(cache.production_ready());

  ModelCache fresh(*store_, {});
  ASSERT_TRUE(store_->set_alias("production", adapted, "test", "promoted").is_ok());
  ASSERT_TRUE(fresh.resync().is_ok());
  EXPECT_EQ(fresh.loaded_count(), 3u);
  auto t4 = fresh.get("production", "t4");
  ASSERT_TRUE(t4) << t4.status().to_string();
  EXPECT_EQ((*t4)->adapter_platform, "t4");
  EXPECT_EQ(fresh.loaded_count(), 3u);  // served from what resync loaded
}

// Loading a version's models for an alias move never evicts the ones it
// loaded first, however small the cache: the version is not aliased until
// they are all in.
TEST_F(ModelCacheTest, AVersionBeingLoadedForAnAliasKeepsEveryModel) {
  const std::string trunk = tcl::testing::fresh_checkpoint(1);
  add_version(tcl::testing::with_adapter(trunk, "t4", 3), /*production=*/true);
  const std::int64_t next =
      add_version(tcl::testing::with_adapter(tcl::testing::with_adapter(trunk, "t4", 4), "v100", 5));
  ModelCacheOptions options;
  options.max_versions = 2;
  ModelCache cache(*store_, options);
  ASSERT_TRUE(cache.resync().is_ok());
  EXPECT_EQ(cache.loaded_count(), 2u);  // production's trunk and t4
  cache.on_alias_change({"production", next});
  EXPECT_TRUE(cache.production_ready());
  EXPECT_EQ(cache.loaded_count(), 3u);  // next's three; the unaliased first version's went

  ModelCache fresh(*store_, options);
  ASSERT_TRUE(store_->set_alias("production", next, "test", "promoted").is_ok());
  ASSERT_TRUE(fresh.resync().is_ok());  // at start: nothing is aliased in the cache yet
  EXPECT_TRUE(fresh.production_ready());
  EXPECT_EQ(fresh.loaded_count(), 3u);
}

// A best-of version (onboarding/best_of.h): a pinned platform is served by
// its pinned model, bit for bit as the version it came from, an unknown one
// by the trunk, and production is ready only once the pinned model is loaded.
TEST_F(ModelCacheTest, APinnedPlatformGetsItsPinnedModel) {
  const std::string parent = tcl::testing::fresh_checkpoint(1);
  const std::int64_t v1 = add_version(parent);
  auto pinned = trainer::pin_platform(tcl::testing::fresh_checkpoint(2), "x16", parent);
  ASSERT_TRUE(pinned) << pinned.status().to_string();
  const std::int64_t v2 = add_version(*pinned, /*production=*/true);
  ModelCache cache(*store_, {});
  ASSERT_TRUE(cache.resync().is_ok());
  EXPECT_TRUE(cache.production_ready());
  auto x16 = cache.get("production", "x16");
  ASSERT_TRUE(x16) << x16.status().to_string();
  EXPECT_EQ((*x16)->adapter_platform, "x16");
  auto old = cache.get(std::to_string(v1), "x16");
  ASSERT_TRUE(old);
  EXPECT_EQ(scores_of(**x16), scores_of(**old));  // the parent's model, bit for bit
  auto unknown = cache.get(std::to_string(v2), "t4");
  ASSERT_TRUE(unknown);
  EXPECT_EQ((*unknown)->adapter_platform, "");
  EXPECT_NE(scores_of(**unknown), scores_of(**x16));
}

}  // namespace
}  // namespace tcl::api
