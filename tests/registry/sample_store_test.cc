// tests/registry/sample_store_test.cc — sample requests (registry/sample_store.h)
// against a real PostgreSQL: stored whole with ranks and scores (NaN as NULL),
// the input errors, items fulfilled by measurements of any later upload (failed
// ones included) until the request completes, cancel, the pending programs a
// new round leaves out, and the onboarding counts.
#include "registry/sample_store.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/sha256.h"
#include "registry/platform_store.h"
#include "registry/upload_store.h"
#include "tests/registry/registry_test_env.h"

namespace tcl::registry {
namespace {

using testing::query_text;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Program `n` of one task: a candidate or measurement row (equal n, equal program).
UploadRow row(int n, std::vector<double> costs = {}, std::int32_t error_no = 0) {
  UploadRow r;
  r.workload_key = "[\"task\",[1,64,56,56]]";
  const std::string steps = "[[\"SP\",2,0,1024,[" + std::to_string(n) + ",4],1]]";
  r.program_id = sha256_hex(r.workload_key + "\n" + steps);
  r.record =
      "{\"i\": [[" + r.workload_key + ", \"llvm\"], [[], " + steps + "]], \"r\": [[0], 0, 0, 0], \"v\": \"v0.6\"}";
  r.costs = std::move(costs);
  r.error_no = error_no;
  r.timestamp = 1600000000;
  return r;
}

class SampleStoreTest : public testing::MigratedDbTest {
 protected:
  void SetUp() override {
    MigratedDbTest::SetUp();
    PlatformStore platforms(*pool_);
    NewPlatform p;
    p.name = "cpu";
    p.target = "llvm";
    auto created = platforms.create(p);
    ASSERT_TRUE(created) << created.status().to_string();
    platform_ = created->id;
    uploads_ = std::make_unique<UploadStore>(*pool_);
    samples_ = std::make_unique<SampleStore>(*pool_);
    std::vector<UploadRow> pool;
    for (int n = 0; n < 6; ++n) pool.push_back(row(n));
    upload(UploadKind::kCandidates, pool, "pool");
  }

  void upload(UploadKind kind, const std::vector<UploadRow>& rows, const std::string& tag) {
    auto writer = uploads_->begin(platform_, kind);
    ASSERT_TRUE(writer) << writer.status().to_string();
    for (const UploadRow& r : rows) ASSERT_TRUE((*writer)->add(r).is_ok());
    auto done = (*writer)->commit("", sha256_hex(tag), [](std::int64_t, const UploadCounts& c) {
      return "{\"accepted\": " + std::to_string(c.inserted) + "}";  // what the counts read, as api/ingest writes it
    });
    ASSERT_TRUE(done) << done.status().to_string();
  }

  // A request for programs `picks` (in that order), scored 1.0, 0.5, ...
  Result<SampleRequest> create(const std::vector<int>& picks, const std::string& strategy = "rdu") {
    NewSampleRequest req;
    req.platform_id = platform_;
    req.strategy = strategy;
    req.params_json = R"({"budget": 3})";
    for (std::size_t i = 0; i < picks.size(); ++i) {
      SampleItem it;
      it.rank = 99;  // assigned by the store, whatever is given
      it.program_id = row(picks[i]).program_id;
      it.r = 0.1;
      it.d = 0.2;
      it.u = strategy == "random" ? kNaN : 0.3;
      it.score = 1.0 / static_cast<double>(i + 1);
      req.items.push_back(it);
    }
    return samples_->create(req);
  }

  std::int64_t platform_ = 0;
  std::unique_ptr<UploadStore> uploads_;
  std::unique_ptr<SampleStore> samples_;
};

// Every strategy the sampler names is stored (migration 0009 added fast and
// uniform: before it the table's CHECK refused them).
TEST_F(SampleStoreTest, EveryStrategyOfTheSamplerIsStored) {
  int n = 0;
  for (const char* strategy : {"rdu", "random", "r", "d", "u", "fast", "uniform"}) {
    auto created = create({n++ % 6}, strategy);
    ASSERT_TRUE(created) << strategy << ": " << created.status().to_string();
    EXPECT_EQ(created->strategy, strategy);
  }
}

TEST_F(SampleStoreTest, StoresTheRequestWithItsItemsInPickOrder) {
  auto created = create({4, 1, 2});
  ASSERT_TRUE(created) << created.status().to_string();
  EXPECT_GT(created->id, 0);
  EXPECT_EQ(created->platform, "cpu");
  EXPECT_EQ(created->platform_id, platform_);
  EXPECT_EQ(created->strategy, "rdu");
  EXPECT_EQ(created->status, "open");
  EXPECT_EQ(created->items, 3);
  EXPECT_EQ(created->measured, 0);
  EXPECT_FALSE(created->model_version.has_value());
  EXPECT_EQ(created->completed_at, "");
  EXPECT_NE(created->params_json.find("\"budget\""), std::string::npos);

  auto items = samples_->items(created->id);
  ASSERT_TRUE(items) << items.status().to_string();
  ASSERT_EQ(items->size(), 3u);
  const int order[] = {4, 1, 2};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ((*items)[i].rank, i);
    EXPECT_EQ((*items)[i].program_id, row(order[i]).program_id);
    EXPECT_DOUBLE_EQ((*items)[i].u, 0.3);
    EXPECT_DOUBLE_EQ((*items)[i].score, 1.0 / (i + 1));
    EXPECT_FALSE((*items)[i].measured);
  }
}

TEST_F(SampleStoreTest, ListGivesThePlatformsRequestsNewestFirstWithMeasuredCountsRefreshed) {
  auto first = create({0, 1});
  auto second = create({2, 3, 4});
  ASSERT_TRUE(first && second);
  // Program 2 measured by a later upload: the list counts it without a GET of the request first.
  upload(UploadKind::kMeasurements, {row(2, {0.001})}, "measured-2");
  auto list = samples_->list(platform_, 100);
  ASSERT_TRUE(list) << list.status().to_string();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].id, second->id);
  EXPECT_EQ((*list)[0].items, 3);
  EXPECT_EQ((*list)[0].measured, 1);
  EXPECT_EQ((*list)[1].id, first->id);
  EXPECT_EQ((*list)[1].measured, 0);
  auto one = samples_->list(platform_, 1);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->size(), 1u);
  auto none = samples_->list(platform_ + 1000, 100);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(SampleStoreTest, NanScoresAreStoredAsNullAndReadBackAsNan) {
  auto created = create({0}, "random");
  ASSERT_TRUE(created) << created.status().to_string();
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM sample_request_items WHERE score_u IS NULL"), "1");
  auto items = samples_->items(created->id);
  ASSERT_TRUE(items);
  EXPECT_TRUE(std::isnan((*items)[0].u));
  EXPECT_DOUBLE_EQ((*items)[0].r, 0.1);
}

TEST_F(SampleStoreTest, RefusesBadInputAndStoresNothing) {
  EXPECT_EQ(create({}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(create({1}, "greedy").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(create({1, 1}).status().code(), StatusCode::kInvalidArgument);  // a program twice
  NewSampleRequest not_hex;
  not_hex.platform_id = platform_;
  not_hex.strategy = "rdu";
  not_hex.items.push_back(SampleItem{0, "XYZ"});
  EXPECT_EQ(samples_->create(not_hex).status().code(), StatusCode::kInvalidArgument);
  NewSampleRequest array_params = not_hex;
  array_params.items[0].program_id = row(1).program_id;
  array_params.params_json = "[1, 2]";
  EXPECT_EQ(samples_->create(array_params).status().code(), StatusCode::kInvalidArgument);
  NewSampleRequest no_platform = array_params;
  no_platform.params_json = "{}";
  no_platform.platform_id = platform_ + 1000;
  EXPECT_EQ(samples_->create(no_platform).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM sample_requests"), "0");  // never half
  EXPECT_EQ(samples_->get(12345).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(samples_->items(12345).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(samples_->cancel(12345).status().code(), StatusCode::kNotFound);
}

TEST_F(SampleStoreTest, MeasurementsOfLaterUploadsFulfilItemsUntilTheRequestCompletes) {
  auto created = create({0, 1, 2});
  ASSERT_TRUE(created);
  std::vector<std::string> to_measure;
  ASSERT_TRUE(samples_->for_each_record_to_measure(created->id, [&](const std::string& r) { to_measure.push_back(r); })
                  .is_ok());
  ASSERT_EQ(to_measure.size(), 3u);
  EXPECT_EQ(to_measure[0], row(0).record);  // the candidate lines, in pick order
  EXPECT_EQ(to_measure[2], row(2).record);

  upload(UploadKind::kMeasurements, {row(1, {0.5}), row(5, {0.5})}, "m1");  // 5 was not picked
  auto partly = samples_->get(created->id);
  ASSERT_TRUE(partly);
  EXPECT_EQ(partly->measured, 1);
  EXPECT_EQ(partly->status, "open");
  to_measure.clear();
  ASSERT_TRUE(samples_->for_each_record_to_measure(created->id, [&](const std::string& r) { to_measure.push_back(r); })
                  .is_ok());
  EXPECT_EQ(to_measure, (std::vector<std::string>{row(0).record, row(2).record}));

  // A failed measurement fulfils its item too: the lab tried it.
  upload(UploadKind::kMeasurements, {row(0, {0.5}), row(2, {1e10}, /*error_no=*/4)}, "m2");
  auto done = samples_->get(created->id);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->measured, 3);
  EXPECT_EQ(done->status, "completed");
  EXPECT_NE(done->completed_at, "");
  EXPECT_EQ(samples_->cancel(created->id).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(SampleStoreTest, PendingProgramsAreTheOpenRequestsUnmeasuredPicks) {
  auto first = create({0, 1});
  auto second = create({2, 3});
  ASSERT_TRUE(first && second);
  upload(UploadKind::kMeasurements, {row(1, {0.5})}, "m");
  ASSERT_TRUE(samples_->get(first->id));  // refreshes
  auto pending = samples_->pending_programs(platform_);
  ASSERT_TRUE(pending) << pending.status().to_string();
  EXPECT_EQ(*pending, (std::unordered_set<std::string>{row(0).program_id, row(2).program_id, row(3).program_id}));

  auto cancelled = samples_->cancel(second->id);
  ASSERT_TRUE(cancelled) << cancelled.status().to_string();
  EXPECT_EQ(cancelled->status, "cancelled");
  auto again = samples_->cancel(second->id);  // returned as it is
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, "cancelled");
  pending = samples_->pending_programs(platform_);
  ASSERT_TRUE(pending);
  EXPECT_EQ(*pending, (std::unordered_set<std::string>{row(0).program_id}));
}

TEST_F(SampleStoreTest, OnboardingCountsPerPlatform) {
  auto first = create({0, 1, 2});
  auto cancelled = create({3});
  ASSERT_TRUE(first && cancelled);
  ASSERT_TRUE(samples_->cancel(cancelled->id));
  upload(UploadKind::kMeasurements, {row(0, {0.5}), row(5, {0.5})}, "m");
  ASSERT_TRUE(samples_->get(first->id));  // refreshes: one of three measured
  auto counts = samples_->onboarding_counts();
  ASSERT_TRUE(counts) << counts.status().to_string();
  ASSERT_EQ(counts->size(), 1u);
  const OnboardingCounts& c = (*counts)[0];
  EXPECT_EQ(c.platform, "cpu");
  EXPECT_EQ(c.candidates, 6);
  EXPECT_EQ(c.measurements, 2);
  EXPECT_EQ(c.sample_requests, 1);  // the cancelled one left out
  EXPECT_EQ(c.to_measure, 2);
}

}  // namespace
}  // namespace tcl::registry
