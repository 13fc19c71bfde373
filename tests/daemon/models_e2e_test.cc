// The lineage, aliases and jobs routes through the real tcld. Versions are
// written with registry::ModelStore (what the job worker does) and read back
// over HTTP.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <boost/json.hpp>

#include "core/sha256.h"
#include "registry/model_store.h"
#include "registry/pg_pool.h"
#include "tests/lib/http_client.h"
#include "tests/lib/model_versions.h"
#include "tests/lib/pg_cluster.h"
#include "tests/lib/tcld_env.h"
#include "tests/lib/tcld_process.h"

namespace tcl::testing {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

class ModelsTest : public TcldEnvTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(start_tcld());
    admin_ = token("ops", "admin");
    writer_ = token("lab", "write");
    ASSERT_EQ(call("POST", "/v1/platforms",
                   R"({"name": "x86", "target": "llvm", "hardware_params": [24,64,64,0,0,0,0,0]})", writer_)
                  .status,
              201);
    pool_ = std::make_unique<registry::PgPool>(registry::PgPoolOptions{url_, 2});
    models_ = std::make_unique<registry::ModelStore>(*pool_);
  }
  HttpResult call(const std::string& method, const std::string& target, const std::string& body,
                  const std::string& token) {
    return http_call(tcld_->port(), HttpCall{method, target, body, token, {}, 30s});
  }
  std::int64_t add_version(const std::string& weights, std::optional<std::int64_t> parent) {
    return tcl::testing::add_version(
        *models_, weights, {.parent = parent, .platforms = {"x86"}, .metrics_json = R"({"x86": {"top1": 0.9}})"});
  }

  std::string admin_, writer_;
  std::unique_ptr<registry::PgPool> pool_;
  std::unique_ptr<registry::ModelStore> models_;
};

TEST_F(ModelsTest, LineageVersionsAndWeights) {
  EXPECT_EQ(call("GET", "/v1/models", "", writer_).json().at("versions").as_array().size(), 0u);
  const std::int64_t v1 = add_version(std::string("weights-one\0\x01\x02", 14), std::nullopt);
  const std::int64_t v2 = add_version("weights-two", v1);

  auto lineage = call("GET", "/v1/models", "", writer_);
  ASSERT_EQ(lineage.status, 200);
  const json::value lineage_json = lineage.json();
  const auto& versions = lineage_json.at("versions").as_array();
  ASSERT_EQ(versions.size(), 2u);
  EXPECT_EQ(versions[0].at("version").as_int64(), v1);
  EXPECT_TRUE(versions[0].at("parent").is_null());
  EXPECT_EQ(versions[1].at("parent").as_int64(), v1);
  EXPECT_EQ(versions[0].at("aliases").as_array()[0].as_string(), "production");  // the first version
  EXPECT_EQ(versions[0].at("metrics").at("x86").at("top1").as_double(), 0.9);

  auto by_alias = call("GET", "/v1/models/production", "", writer_);
  ASSERT_EQ(by_alias.status, 200);
  EXPECT_EQ(by_alias.json().at("version").as_int64(), v1);
  EXPECT_EQ(by_alias.json().at("weights_size").as_int64(), 14);

  auto weights = call("GET", "/v1/models/" + std::to_string(v1) + "/weights", "", writer_);
  ASSERT_EQ(weights.status, 200);
  EXPECT_EQ(weights.body, std::string("weights-one\0\x01\x02", 14));
  EXPECT_EQ(weights.headers["X-Weights-SHA256"], sha256_hex(weights.body));
  EXPECT_EQ(weights.headers["Content-Type"], "application/octet-stream");

  EXPECT_EQ(call("GET", "/v1/models/99", "", writer_).status, 404);
  EXPECT_EQ(call("GET", "/v1/models/no-such-alias", "", writer_).status, 404);

  // Corrupted bytes are never served: drop the CHECK constraints, flip a byte.
  const std::string sql = "psql -q '" + url_ +
                          "' -c 'ALTER TABLE model_versions DROP CONSTRAINT model_versions_weights_sha256' -c "
                          "'UPDATE model_versions SET weights = set_byte(weights, 1, 0) WHERE version = " +
                          std::to_string(v2) + "' >/dev/null";
  ASSERT_EQ(std::system(sql.c_str()), 0);
  auto bad = call("GET", "/v1/models/" + std::to_string(v2) + "/weights", "", writer_);
  EXPECT_EQ(bad.status, 500) << bad.body;
  EXPECT_EQ(bad.json().at("error").at("code").as_string(), "DATA_LOSS");
}

TEST_F(ModelsTest, AliasesMoveWithHistoryAndRollBack) {
  const std::int64_t v1 = add_version("w1", std::nullopt);
  const std::int64_t v2 = add_version("w2", v1);
  const std::string to_v2 = R"({"version": )" + std::to_string(v2) + R"(, "reason": "passes the gate"})";
  EXPECT_EQ(call("PUT", "/v1/aliases/production", to_v2, writer_).status, 403);  // admin only
  auto moved = call("PUT", "/v1/aliases/production", to_v2, admin_);
  ASSERT_EQ(moved.status, 200) << moved.body;
  EXPECT_TRUE(moved.json().at("changed").as_bool());
  EXPECT_EQ(call("GET", "/v1/aliases/production", "", writer_).json().at("version").as_int64(), v2);

  // Rollback = moving it back; history keeps every move.
  ASSERT_EQ(call("PUT", "/v1/aliases/production", R"({"version": )" + std::to_string(v1) + R"(, "reason": "rollback"})",
                 admin_)
                .status,
            200);
  auto history = call("GET", "/v1/aliases/production/history", "", writer_);
  ASSERT_EQ(history.status, 200);
  const json::value history_json = history.json();
  const auto& moves = history_json.at("history").as_array();
  ASSERT_EQ(moves.size(), 3u);
  EXPECT_TRUE(moves[0].at("from_version").is_null());
  EXPECT_EQ(moves[1].at("to_version").as_int64(), v2);
  EXPECT_EQ(moves[1].at("actor").as_string(), "ops");
  EXPECT_EQ(moves[2].at("reason").as_string(), "rollback");
  EXPECT_EQ(moves[2].at("to_version").as_int64(), v1);

  EXPECT_EQ(call("PUT", "/v1/aliases/production", R"({"version": 77})", admin_).status, 404);
  EXPECT_EQ(call("PUT", "/v1/aliases/production", R"({"reason": "x"})", admin_).status, 400);
  EXPECT_EQ(call("PUT", "/v1/aliases/Bad%20Name", R"({"version": 1})", admin_).status, 400);
  EXPECT_EQ(call("GET", "/v1/aliases/nothing", "", writer_).status, 404);
}

// Finding 7 of issue 18 (part): an alias named only by digits was stored but
// unreachable (GET /v1/models/2 reads version 2). Alias names start with a
// letter; the name is refused before any version is looked up.
TEST_F(ModelsTest, AliasNamesStartWithALetter) {
  const std::int64_t v1 = add_version("w1", std::nullopt);
  const std::int64_t v2 = add_version("w2", v1);
  const std::string to_v1 = R"({"version": )" + std::to_string(v1) + "}";
  for (const std::string& name : {std::to_string(v2), std::string("2abc"), std::string("_x")}) {
    auto r = call("PUT", "/v1/aliases/" + name, to_v1, admin_);
    EXPECT_EQ(r.status, 400) << name << ": " << r.body;
    EXPECT_EQ(r.json().at("error").at("details").at("field").as_string(), "alias") << name << ": " << r.body;
    EXPECT_NE(r.body.find("start with a letter"), std::string::npos) << r.body;
  }
  // 400 even for a version that does not exist (the name is checked first).
  EXPECT_EQ(call("PUT", "/v1/aliases/7", R"({"version": 999})", admin_).status, 400);
  // Nothing was stored: /v1/models/<v2> still names version v2, and no alias moved.
  auto by_number = call("GET", "/v1/models/" + std::to_string(v2), "", writer_);
  ASSERT_EQ(by_number.status, 200) << by_number.body;
  EXPECT_EQ(by_number.json().at("version").as_int64(), v2);
  EXPECT_EQ(call("GET", "/v1/aliases/2abc", "", writer_).status, 404);
  EXPECT_EQ(call("PUT", "/v1/aliases/canary-2", to_v1, admin_).status, 200);  // digits after a letter are fine
}

TEST_F(ModelsTest, JobsAreQueuedReadAndCancelled) {
  // No training worker in this tcld, so the job stays queued until cancelled
  // (with one, it could start and fail on the empty platform first).
  tcld_ = std::make_unique<TcldProcess>(url_, std::vector<std::string>{"--train-workers", "0"});
  ASSERT_TRUE(tcld_->start()) << tcld_->log();
  auto created = call("POST", "/v1/platforms/x86/jobs", R"({"kind": "train", "epochs": 2})", writer_);
  ASSERT_EQ(created.status, 202) << created.body;
  const json::value job = created.json();
  EXPECT_EQ(job.at("state").as_string(), "queued");
  EXPECT_EQ(job.at("kind").as_string(), "train");
  EXPECT_EQ(job.at("options").at("epochs").as_int64(), 2);
  const std::string id = std::to_string(job.at("id").as_int64());
  EXPECT_EQ(created.headers["Location"], "/v1/jobs/" + id);

  auto got = call("GET", "/v1/jobs/" + id, "", writer_);
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(got.json().at("platform").as_string(), "x86");
  EXPECT_EQ(call("GET", "/v1/platforms/x86/jobs", "", writer_).json().at("jobs").as_array().size(), 1u);

  auto cancelled = call("POST", "/v1/jobs/" + id + "/cancel", "", writer_);
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(cancelled.json().at("state").as_string(), "cancelled");
  auto again = call("POST", "/v1/jobs/" + id + "/cancel", "", writer_);  // idempotent
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.json().at("state").as_string(), "cancelled");

  EXPECT_EQ(call("POST", "/v1/platforms/x86/jobs", R"({"kind": "dance"})", writer_).status, 400);
  EXPECT_EQ(call("POST", "/v1/platforms/x86/jobs", R"({})", writer_).status, 400);
  EXPECT_EQ(call("POST", "/v1/platforms/nope/jobs", R"({"kind": "train"})", writer_).status, 404);
  EXPECT_EQ(call("GET", "/v1/jobs/424242", "", writer_).status, 404);
  EXPECT_EQ(call("GET", "/v1/jobs/abc", "", writer_).status, 404);

  // tcld_jobs is read from the database every --metrics-refresh-ms (5 s), not per scrape.
  std::string metrics;
  for (int i = 0; i < 200 && metrics.find("tcld_jobs{state=\"cancelled\"} 1") == std::string::npos; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    metrics = http_get(tcld_->port(), "/metrics").body;
  }
  EXPECT_NE(metrics.find("tcld_jobs{state=\"cancelled\"} 1"), std::string::npos) << metrics;
}

TEST_F(ModelsTest, AnEndedJobCannotBeCancelled) {
  // The fixture's tcld runs one training worker: a train job on a platform
  // with no measurements fails at once.
  auto created = call("POST", "/v1/platforms/x86/jobs", R"({"kind": "train", "epochs": 1})", writer_);
  ASSERT_EQ(created.status, 202) << created.body;
  const std::string id = std::to_string(created.json().at("id").as_int64());
  std::string state = "queued";
  for (int i = 0; i < 200 && (state == "queued" || state == "running"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto got = call("GET", "/v1/jobs/" + id, "", writer_);
    ASSERT_EQ(got.status, 200) << got.body;
    state = std::string(got.json().at("state").as_string());
  }
  ASSERT_EQ(state, "failed");
  auto cancelled = call("POST", "/v1/jobs/" + id + "/cancel", "", writer_);
  EXPECT_EQ(cancelled.status, 409) << cancelled.body;
  EXPECT_NE(cancelled.body.find("already failed"), std::string::npos) << cancelled.body;
}

}  // namespace
}  // namespace tcl::testing
