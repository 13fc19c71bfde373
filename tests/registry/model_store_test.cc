#include "registry/model_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "core/sha256.h"
#include "registry/job_queue.h"
#include "registry/platform_store.h"
#include "tests/registry/registry_test_env.h"

namespace tcl::registry {
namespace {

using testing::exec_sql;
using testing::query_text;

// Bytes that are not text: NULs, high bytes, every value.
std::string binary_bytes(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7) & 0xff);
  return s;
}

class ModelStoreTest : public testing::MigratedDbTest {
 protected:
  void SetUp() override {
    MigratedDbTest::SetUp();
    if (HasFatalFailure()) return;
    add_platform("cpu");
    add_platform("gpu");
    if (HasFailure()) return;
    store_ = std::make_unique<ModelStore>(*pool_);
  }

  NewVersion version(std::optional<std::int64_t> parent, std::vector<std::string> platforms, unsigned seed) {
    NewVersion v;
    v.parent = parent;
    v.platforms = std::move(platforms);
    v.weights = binary_bytes(1000 + seed, seed);
    return v;
  }

  std::int64_t create(std::optional<std::int64_t> parent, std::vector<std::string> platforms, unsigned seed,
                      const CreateVersionOptions& options = {}) {
    auto v = store_->create_version(version(parent, std::move(platforms), seed), options);
    EXPECT_TRUE(v.is_ok()) << v.status().to_string();
    return v.is_ok() ? v->version : 0;
  }

  std::unique_ptr<ModelStore> store_;
};

TEST(VersionNames, RoundTripAndAliasNames) {
  for (VersionStatus s : {VersionStatus::kCandidate, VersionStatus::kPromoted, VersionStatus::kRejected}) {
    EXPECT_EQ(parse_version_status(version_status_name(s)), s);
  }
  EXPECT_FALSE(parse_version_status("deployed").has_value());
  EXPECT_TRUE(is_valid_alias_name("production"));
  EXPECT_TRUE(is_valid_alias_name("canary-2.gpu_x"));
  EXPECT_TRUE(is_valid_alias_name(std::string(64, 'a')));
  EXPECT_FALSE(is_valid_alias_name(std::string(65, 'a')));
  EXPECT_FALSE(is_valid_alias_name(""));
  EXPECT_FALSE(is_valid_alias_name("Production"));
  EXPECT_FALSE(is_valid_alias_name("-x"));
  EXPECT_FALSE(is_valid_alias_name("a b"));
}

TEST_F(ModelStoreTest, CreateStoresEverythingAndGetReadsMetadata) {
  NewVersion v = version(std::nullopt, {"cpu", "gpu"}, 1);
  v.config_json = R"({"blocks": 2, "d_model": 64})";
  v.metrics_json = R"({"cpu": {"top1": 0.91}})";
  v.training_summary_json = R"({"epochs": 30})";
  v.fisher = binary_bytes(500, 9);
  auto created = store_->create_version(v);
  ASSERT_TRUE(created.is_ok()) << created.status().to_string();
  EXPECT_GT(created->version, 0);
  EXPECT_FALSE(created->parent.has_value());
  EXPECT_EQ(created->platforms, (std::vector<std::string>{"cpu", "gpu"}));
  EXPECT_EQ(created->weights_sha256, sha256_hex(v.weights));
  EXPECT_EQ(created->weights_size, static_cast<std::int64_t>(v.weights.size()));
  EXPECT_EQ(created->fisher_sha256, sha256_hex(*v.fisher));
  EXPECT_EQ(created->fisher_size, 500);
  EXPECT_EQ(created->status, VersionStatus::kCandidate);
  EXPECT_EQ(created->status_reasons_json, "{}");
  EXPECT_EQ(created->status_changed_at, "");
  EXPECT_EQ(created->created_at.size(), 20u);
  EXPECT_TRUE(created->aliases.empty());

  auto got = store_->get(created->version);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got->config_json, R"({"blocks": 2, "d_model": 64})");
  EXPECT_EQ(got->metrics_json, R"({"cpu": {"top1": 0.91}})");
  EXPECT_EQ(got->training_summary_json, R"({"epochs": 30})");
  EXPECT_EQ(got->weights_sha256, created->weights_sha256);
  // The database agrees with core/sha256.h.
  EXPECT_EQ(query_text(url_, "SELECT encode(sha256(weights), 'hex') FROM model_versions"), sha256_hex(v.weights));

  auto weights = store_->weights(created->version);
  ASSERT_TRUE(weights.is_ok()) << weights.status().to_string();
  EXPECT_EQ(weights->bytes, v.weights);
  EXPECT_EQ(weights->sha256, sha256_hex(v.weights));
  auto fisher = store_->fisher(created->version);
  ASSERT_TRUE(fisher.is_ok()) << fisher.status().to_string();
  EXPECT_EQ(fisher->bytes, *v.fisher);

  const std::int64_t bare = create(created->version, {"cpu"}, 2);
  EXPECT_EQ(store_->fisher(bare).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(store_->get(bare)->fisher_sha256.has_value());
  EXPECT_EQ(store_->get(9999).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->weights(9999).status().code(), StatusCode::kNotFound);
}

TEST_F(ModelStoreTest, CreateRejectsBadInputAndStoresNothing) {
  NewVersion v = version(std::nullopt, {"cpu"}, 1);
  auto expect_code = [&](NewVersion bad, StatusCode code) {
    auto r = store_->create_version(bad, {.make_production_if_unset = true});
    EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  };
  NewVersion no_weights = v;
  no_weights.weights.clear();
  expect_code(no_weights, StatusCode::kInvalidArgument);
  NewVersion no_platforms = v;
  no_platforms.platforms.clear();
  expect_code(no_platforms, StatusCode::kInvalidArgument);
  NewVersion twice = v;
  twice.platforms = {"cpu", "cpu"};
  expect_code(twice, StatusCode::kInvalidArgument);
  NewVersion unknown_platform = v;
  unknown_platform.platforms = {"cpu", "tpu"};
  expect_code(unknown_platform, StatusCode::kNotFound);
  NewVersion orphan = v;
  orphan.parent = 77;
  expect_code(orphan, StatusCode::kNotFound);
  NewVersion bad_json = v;
  bad_json.metrics_json = "{top1: 0.5";
  expect_code(bad_json, StatusCode::kInvalidArgument);

  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM model_versions"), "0");
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM aliases"), "0");
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM alias_history"), "0");
}

// The schema refuses a version whose bytes do not match its checksum, so no
// half-written or mislabelled row can exist.
TEST_F(ModelStoreTest, SchemaChecksTheChecksumOfEveryInsert) {
  try {
    exec_sql(url_, "INSERT INTO model_versions (platforms, weights, weights_sha256) VALUES ('{cpu}', '\\x0102', '" +
                       sha256_hex("other") + "')");
    ADD_FAILURE() << "a wrong weights_sha256 was accepted";
  } catch (const pqxx::check_violation&) {
  }
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM model_versions"), "0");
}

// The version row, its production alias and the alias history are one
// transaction: if the last step fails, the version was never there.
TEST_F(ModelStoreTest, CreateIsAllOrNothing) {
  exec_sql(url_, R"sql(
    CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'refused by test'; END $$;
    CREATE TRIGGER refuse BEFORE INSERT ON alias_history FOR EACH ROW EXECUTE FUNCTION test_refuse();
  )sql");
  auto r = store_->create_version(version(std::nullopt, {"cpu"}, 1), {.make_production_if_unset = true});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM model_versions"), "0");
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM aliases"), "0");
}

// A reader polling from another connection sees versions appear whole or not
// at all, however large their weights.
TEST_F(ModelStoreTest, ReadersNeverSeeAPartialVersion) {
  constexpr int kVersions = 8;
  constexpr std::size_t kSize = 2 << 20;  // 2 MiB each
  std::atomic<bool> done{false};
  std::atomic<int> partial{0};
  std::atomic<int> polls{0};
  std::thread reader([&] {
    pqxx::connection conn(url_);
    while (!done.load()) {
      pqxx::nontransaction tx(conn);
      const pqxx::result r = tx.exec("SELECT count(*) FILTER (WHERE weights_size <> " + std::to_string(kSize) +
                                     " OR weights_sha256 <> encode(sha256(weights), 'hex')) FROM model_versions");
      partial.fetch_add(r[0][0].as<int>());
      polls.fetch_add(1);
    }
  });
  std::int64_t parent = 0;
  for (int i = 0; i < kVersions; ++i) {
    NewVersion v = version(parent == 0 ? std::nullopt : std::optional<std::int64_t>(parent), {"cpu"}, i);
    v.weights = binary_bytes(kSize, static_cast<unsigned>(i));
    auto created = store_->create_version(v);
    ASSERT_TRUE(created.is_ok()) << created.status().to_string();
    parent = created->version;
  }
  done.store(true);
  reader.join();
  EXPECT_GT(polls.load(), 0);
  EXPECT_EQ(partial.load(), 0);
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM model_versions"), std::to_string(kVersions));
}

TEST_F(ModelStoreTest, CorruptedWeightsAreDataLossNeverReturned) {
  NewVersion v = version(std::nullopt, {"cpu"}, 3);
  v.fisher = binary_bytes(300, 4);
  auto created = store_->create_version(v);
  ASSERT_TRUE(created.is_ok());
  const std::string id = std::to_string(created->version);

  // Storage corruption below the CHECK constraints: drop them and flip a byte.
  exec_sql(url_,
           "ALTER TABLE model_versions DROP CONSTRAINT model_versions_weights_sha256, "
           "DROP CONSTRAINT model_versions_fisher_sha256");
  exec_sql(url_,
           "UPDATE model_versions SET weights = set_byte(weights, 10, (get_byte(weights, 10) + 1) % 256) "
           "WHERE version = " +
               id);
  auto weights = store_->weights(created->version);
  ASSERT_FALSE(weights.is_ok());
  EXPECT_EQ(weights.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(weights.status().message().find(sha256_hex(v.weights)), std::string::npos) << weights.status().to_string();
  EXPECT_TRUE(store_->fisher(created->version).is_ok());
  EXPECT_TRUE(store_->get(created->version).is_ok());  // metadata stays readable

  exec_sql(url_, "UPDATE model_versions SET fisher = substring(fisher FROM 2) WHERE version = " + id);
  EXPECT_EQ(store_->fisher(created->version).status().code(), StatusCode::kDataLoss);

  // A wrong checksum (rather than wrong bytes) is caught the same way.
  exec_sql(url_, "UPDATE model_versions SET weights = '\\x00', weights_sha256 = repeat('0', 64) WHERE version = " + id);
  EXPECT_EQ(store_->weights(created->version).status().code(), StatusCode::kDataLoss);
}

TEST_F(ModelStoreTest, LineageIsOldestFirstWithParentsAndAliases) {
  const std::int64_t v1 = create(std::nullopt, {"cpu"}, 1);
  const std::int64_t v2 = create(v1, {"cpu", "gpu"}, 2);
  const std::int64_t v3 = create(v2, {"cpu", "gpu"}, 3);
  const std::int64_t side = create(v1, {"cpu"}, 4);  // a sibling branch (e.g. a rejected retry)
  ASSERT_TRUE(store_->set_alias("production", v2, "ops", "").is_ok());
  ASSERT_TRUE(store_->set_alias("canary", v2, "ops", "").is_ok());
  ASSERT_TRUE(store_->set_alias("staging", v3, "ops", "").is_ok());

  auto lineage = store_->lineage();
  ASSERT_TRUE(lineage.is_ok()) << lineage.status().to_string();
  ASSERT_EQ(lineage->size(), 4u);
  std::string shape;
  for (const VersionInfo& v : *lineage) {
    shape += std::to_string(v.version) + "<" + (v.parent ? std::to_string(*v.parent) : "-") + "[";
    for (const std::string& p : v.platforms) shape += p + ",";
    shape += "]{";
    for (const std::string& a : v.aliases) shape += a + ",";
    shape += "} ";
  }
  const auto s = [](std::int64_t x) { return std::to_string(x); };
  EXPECT_EQ(shape, s(v1) + "<-[cpu,]{} " + s(v2) + "<" + s(v1) + "[cpu,gpu,]{canary,production,} " + s(v3) + "<" +
                       s(v2) + "[cpu,gpu,]{staging,} " + s(side) + "<" + s(v1) + "[cpu,]{} ");
}

// The summary: standing splits only, the platform the job trained, and the parts a caller leaves
// out read as "{}".
TEST_F(ModelStoreTest, TheSummarySaysTrainedOnAndLeavesOutParts) {
  NewVersion v = version(std::nullopt, {"cpu", "gpu"}, 1);
  v.metrics_json = R"({"cpu": {"top1": 0.123456789, "standing_split": {"top1": 0.987654321, "tasks": 24, "x": 0.5}},
                       "gpu": {"top1": 0.1, "standing_split": {"top1": 0.25, "held_out": true}},
                       "versus_parent": {"gpu": {"tasks": 3}}})";
  CreateVersionOptions options;
  options.status_reasons_json = R"({"reasons": ["gpu: kept"]})";
  auto created = store_->create_version(v, options);
  ASSERT_TRUE(created.is_ok()) << created.status().to_string();

  auto summary = store_->lineage_summary();
  ASSERT_TRUE(summary.is_ok()) << summary.status().to_string();
  ASSERT_EQ(summary->size(), 1u);
  const VersionInfo& s = summary->at(0);
  EXPECT_EQ(s.metrics_json, R"({"cpu": {"standing_split": {"x": 0.5, "top1": 0.987654321, "tasks": 24}}, )"
                            R"("gpu": {"standing_split": {"top1": 0.25, "held_out": true}}})");
  EXPECT_EQ(s.trained_on, "gpu");
  EXPECT_EQ(s.status_reasons_json, R"({"reasons": ["gpu: kept"]})");
  EXPECT_EQ(store_->lineage()->at(0).trained_on, "");  // the full read does not say

  auto slim = store_->lineage_summary({.metrics = false, .status_reasons = false, .metrics_for = {}});
  ASSERT_TRUE(slim.is_ok()) << slim.status().to_string();
  EXPECT_EQ(slim->at(0).metrics_json, "{}");
  EXPECT_EQ(slim->at(0).status_reasons_json, "{}");
  EXPECT_EQ(slim->at(0).trained_on, "gpu");
  EXPECT_EQ(slim->at(0).platforms, (std::vector<std::string>{"cpu", "gpu"}));

  auto gpu_only = store_->lineage_summary({.metrics = true, .status_reasons = true, .metrics_for = {"gpu", "tpu"}});
  ASSERT_TRUE(gpu_only.is_ok()) << gpu_only.status().to_string();
  EXPECT_EQ(gpu_only->at(0).metrics_json, R"({"gpu": {"standing_split": {"top1": 0.25, "held_out": true}}})");
  EXPECT_EQ(gpu_only->at(0).trained_on, "gpu");
}

TEST_F(ModelStoreTest, AliasMovesAreRecordedAndRollbackIsAMoveBack) {
  const std::int64_t v1 = create(std::nullopt, {"cpu"}, 1);
  const std::int64_t v2 = create(v1, {"cpu", "gpu"}, 2);

  auto first = store_->set_alias("production", v1, "alice", "first deploy");
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_TRUE(first->changed);
  ASSERT_TRUE(first->move.has_value());
  EXPECT_FALSE(first->move->from_version.has_value());
  EXPECT_EQ(first->move->to_version, v1);
  EXPECT_EQ(first->alias.version, v1);

  auto promote = store_->set_alias("production", v2, "bob", "gate passed");
  ASSERT_TRUE(promote.is_ok());
  EXPECT_EQ(promote->move->from_version, v1);
  EXPECT_EQ(promote->move->to_version, v2);
  EXPECT_EQ(store_->get_alias("production")->version, v2);

  auto rollback = store_->set_alias("production", v1, "carol", "gpu regression");
  ASSERT_TRUE(rollback.is_ok());
  EXPECT_EQ(rollback->move->from_version, v2);
  EXPECT_EQ(rollback->move->to_version, v1);
  EXPECT_EQ(store_->get_alias("production")->version, v1);

  // Pointing it where it already points records nothing.
  auto same = store_->set_alias("production", v1, "dave", "again");
  ASSERT_TRUE(same.is_ok());
  EXPECT_FALSE(same->changed);
  EXPECT_FALSE(same->move.has_value());
  EXPECT_EQ(same->alias.version, v1);

  auto history = store_->alias_history("production");
  ASSERT_TRUE(history.is_ok()) << history.status().to_string();
  ASSERT_EQ(history->size(), 3u);
  std::string moves;
  for (const AliasMove& m : *history) {
    EXPECT_EQ(m.alias, "production");
    EXPECT_EQ(m.moved_at.size(), 20u);
    moves += (m.from_version ? std::to_string(*m.from_version) : "-") + ">" + std::to_string(m.to_version) + " " +
             m.actor + " (" + m.reason + "); ";
  }
  const std::string a = std::to_string(v1), b = std::to_string(v2);
  EXPECT_EQ(moves, "->" + a + " alice (first deploy); " + a + ">" + b + " bob (gate passed); " + b + ">" + a +
                       " carol (gpu regression); ");
  EXPECT_LT((*history)[0].id, (*history)[1].id);
  EXPECT_EQ(store_->get(v1)->aliases, std::vector<std::string>{"production"});
  EXPECT_TRUE(store_->get(v2)->aliases.empty());
}

TEST_F(ModelStoreTest, AliasErrorsAndLookups) {
  const std::int64_t v1 = create(std::nullopt, {"cpu"}, 1);
  EXPECT_EQ(store_->set_alias("production", 999, "ops", "").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->set_alias("Prod!", v1, "ops", "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->set_alias("production", v1, "", "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->get_alias("production").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->alias_history("production").status().code(), StatusCode::kNotFound);

  ASSERT_TRUE(store_->set_alias("production", v1, "ops", "").is_ok());
  ASSERT_TRUE(store_->set_alias("canary", v1, "ops", "").is_ok());
  auto aliases = store_->list_aliases();
  ASSERT_TRUE(aliases.is_ok());
  ASSERT_EQ(aliases->size(), 2u);
  EXPECT_EQ((*aliases)[0].name, "canary");
  EXPECT_EQ((*aliases)[1].name, "production");

  EXPECT_EQ(*store_->resolve("production"), v1);
  EXPECT_EQ(*store_->resolve(std::to_string(v1)), v1);
  EXPECT_EQ(store_->resolve("12345").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->resolve("99999999999999999999999").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->resolve("staging").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->resolve("").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->resolve("no such!").status().code(), StatusCode::kNotFound);
}

TEST_F(ModelStoreTest, FirstVersionBecomesProductionAutomatically) {
  const CreateVersionOptions auto_production{.make_production_if_unset = true, .actor = "trainer", .reason = "first"};
  auto v1 = store_->create_version(version(std::nullopt, {"cpu"}, 1), auto_production);
  ASSERT_TRUE(v1.is_ok()) << v1.status().to_string();
  EXPECT_EQ(v1->aliases, std::vector<std::string>{"production"});
  EXPECT_EQ(store_->get_alias("production")->version, v1->version);

  auto v2 = store_->create_version(version(v1->version, {"cpu"}, 2), auto_production);
  ASSERT_TRUE(v2.is_ok());
  EXPECT_TRUE(v2->aliases.empty());
  EXPECT_EQ(store_->get_alias("production")->version, v1->version);

  auto history = store_->alias_history("production");
  ASSERT_TRUE(history.is_ok());
  ASSERT_EQ(history->size(), 1u);
  EXPECT_FALSE((*history)[0].from_version.has_value());
  EXPECT_EQ((*history)[0].to_version, v1->version);
  EXPECT_EQ((*history)[0].actor, "trainer");
  EXPECT_EQ((*history)[0].reason, "first");
}

TEST_F(ModelStoreTest, ConcurrentFirstVersionsSetProductionOnce) {
  constexpr int kWriters = 4;
  std::atomic<int> ready{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int i = 0; i < kWriters; ++i) {
    writers.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < kWriters) std::this_thread::yield();
      auto v = store_->create_version(version(std::nullopt, {"cpu"}, static_cast<unsigned>(i)),
                                      {.make_production_if_unset = true});
      if (!v) failures.fetch_add(1);
    });
  }
  for (auto& t : writers) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM model_versions"), std::to_string(kWriters));
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM alias_history"), "1");
  EXPECT_EQ(query_text(url_, "SELECT version = (SELECT to_version FROM alias_history) FROM aliases"), "t");
}

TEST_F(ModelStoreTest, SetStatusRecordsTheVerdictAndWhy) {
  const std::int64_t v1 = create(std::nullopt, {"cpu"}, 1);
  ASSERT_TRUE(store_->set_status(v1, VersionStatus::kRejected, R"({"forgetting": {"cpu": 0.12}})").is_ok());
  auto got = store_->get(v1);
  ASSERT_TRUE(got.is_ok());
  EXPECT_EQ(got->status, VersionStatus::kRejected);
  EXPECT_EQ(got->status_reasons_json, R"({"forgetting": {"cpu": 0.12}})");
  EXPECT_EQ(got->status_changed_at.size(), 20u);
  ASSERT_TRUE(store_->set_status(v1, VersionStatus::kPromoted, "").is_ok());
  EXPECT_EQ(store_->get(v1)->status_reasons_json, "{}");
  EXPECT_EQ(store_->set_status(999, VersionStatus::kPromoted, "").code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->set_status(v1, VersionStatus::kPromoted, "{bad").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->get(v1)->status, VersionStatus::kPromoted);
}

// Issue 45 #9: a job's version, its status and aliases and the job's finish
// are one transaction. A failure half-way stores none of it; a retried call
// (the first COMMIT's outcome unknown) finds the first version instead of
// adding a second and moving production again; a job lost to another worker
// or cancelled stores nothing.
TEST_F(ModelStoreTest, AJobsVersionAndItsFinishAreOneTransaction) {
  const std::int64_t v1 = create(std::nullopt, {"cpu"}, 1, {.make_production_if_unset = true});
  JobQueue jobs(*pool_);
  const std::int64_t cpu = PlatformStore(*pool_).find("cpu")->id;
  auto queued = jobs.enqueue(cpu, JobKind::kDistill, "");
  ASSERT_TRUE(queued) << queued.status().to_string();
  auto job = jobs.claim("w1", std::chrono::minutes(1));
  ASSERT_TRUE(job) << job.status().to_string();

  NewVersion promoted = version(v1, {"cpu"}, 2);
  promoted.status = VersionStatus::kPromoted;
  CreateVersionOptions options{.actor = "job", .status_reasons_json = R"({"promote": true})"};
  options.aliases = {{"production", "promotion gate", "distilled cpu"}};
  options.job = JobOwner{job->id, "w1"};

  // A failure after the INSERT (bad reasons JSON) rolls everything back.
  CreateVersionOptions broken = options;
  broken.status_reasons_json = "{not json";
  EXPECT_EQ(store_->create_version(promoted, broken).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM model_versions"), "1");
  EXPECT_EQ(jobs.get(job->id)->state, JobState::kRunning);
  EXPECT_EQ(store_->get_alias("production")->version, v1);

  auto v2 = store_->create_version(promoted, options);
  ASSERT_TRUE(v2) << v2.status().to_string();
  EXPECT_EQ(v2->aliases, std::vector<std::string>{"production"});
  EXPECT_EQ(v2->status, VersionStatus::kPromoted);
  EXPECT_EQ(v2->status_reasons_json, R"({"promote": true})");
  auto finished = jobs.get(job->id);
  EXPECT_EQ(finished->state, JobState::kSucceeded);
  EXPECT_EQ(finished->result_version, v2->version);

  // The retry: same version, nothing new, production moved once.
  auto again = store_->create_version(version(v1, {"cpu"}, 3), options);
  ASSERT_TRUE(again) << again.status().to_string();
  EXPECT_EQ(again->version, v2->version);
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM model_versions"), "2");
  EXPECT_EQ(store_->alias_history("production")->size(), 2u);  // created at v1, moved to v2
  EXPECT_EQ(store_->get_alias("production")->version, v2->version);

  // Another worker's job, and a cancelled one: nothing stored.
  auto other = jobs.enqueue(cpu, JobKind::kTrain, "");
  ASSERT_TRUE(other && jobs.claim("w2", std::chrono::minutes(1)));
  options.job = JobOwner{other->id, "w1"};
  EXPECT_EQ(store_->create_version(version(v2->version, {"cpu"}, 4), options).status().code(),
            StatusCode::kFailedPrecondition);
  auto cancelled = jobs.enqueue(cpu, JobKind::kTrain, "");
  ASSERT_TRUE(cancelled && jobs.claim("w1", std::chrono::minutes(1)));
  ASSERT_TRUE(jobs.cancel(cancelled->id));
  options.job = JobOwner{cancelled->id, "w1"};
  EXPECT_EQ(store_->create_version(version(v2->version, {"cpu"}, 5), options).status().code(), StatusCode::kCancelled);
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM model_versions"), "2");
  EXPECT_EQ(store_->alias_history("production")->size(), 2u);
  EXPECT_EQ(jobs.finish(cancelled->id, "w1", JobOutcome::failure("cancelled")).code(), StatusCode::kCancelled);
  EXPECT_EQ(store_->create_version(version(v2->version, {"cpu"}, 6), options).status().code(),
            StatusCode::kCancelled);  // recorded as cancelled by now: still nothing stored
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM model_versions"), "2");
}

}  // namespace
}  // namespace tcl::registry
