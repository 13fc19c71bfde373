// Training jobs end to end: upload real records, start a job over HTTP, a
// worker claims and trains it, the version appears in the lineage as
// production. And crash recovery: a worker killed mid-job loses its lease
// and another worker finishes the job.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <thread>

#include "core/line_reader.h"
#include "core/sha256.h"
#include "tests/lib/http_client.h"
#include "tests/lib/pg_cluster.h"
#include "tests/lib/tcld_env.h"
#include "tests/lib/tcld_process.h"

namespace tcl::testing {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

const std::string kData = std::string(TCL_SOURCE_DIR) + "/../shared/data";

std::string real_body(std::size_t n) {
  auto reader = core::LineReader::open(kData + "/x86-16c/records.jsonl.gz");
  if (!reader) throw std::runtime_error(reader.status().message());
  std::string body;
  std::string_view line;
  for (std::size_t i = 0; i < n && (*reader)->next(&line); ++i) {
    body.append(line);
    body.push_back('\n');
  }
  return body;
}

class TrainingTest : public TcldEnvTest {
 protected:
  void start(std::vector<std::string> serve_args) {
    ASSERT_NO_FATAL_FAILURE(start_tcld(std::move(serve_args)));
    token_ = token("lab", "write");
    ASSERT_EQ(call("POST", "/v1/platforms",
                   R"({"name": "x16", "target": "llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu",
                       "hardware_params": [16, 64, 64, 0, 0, 0, 0, 0]})")
                  .status,
              201);
    ASSERT_EQ(call("POST", "/v1/platforms/x16/measurements", real_body(3000)).status, 201);
  }
  HttpResult call(const std::string& method, const std::string& target, const std::string& body = "") {
    return http_call(tcld_->port(), HttpCall{method, target, body, token_, {}, 60s});
  }
  // Polls the job until `pred` holds or `limit` passes; returns the last state.
  json::value wait_job(const std::string& id, const std::function<bool(const json::value&)>& pred,
                       std::chrono::seconds limit) {
    json::value job;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      job = call("GET", "/v1/jobs/" + id).json();
      if (job.is_object() && pred(job)) break;
      std::this_thread::sleep_for(200ms);
    }
    return job;
  }

  std::string token_;
};

bool state_is(const json::value& j, const char* s) { return j.at("state").as_string() == s; }

TEST_F(TrainingTest, TrainJobCreatesTheFirstVersionAsProduction) {
  start({"--train-workers", "1", "--train-threads", "1", "--metrics-names", "--metrics-refresh-ms", "100"});
  auto created = call("POST", "/v1/platforms/x16/jobs",
                      R"({"kind": "train", "epochs": 2, "max_records": 2000, "eval_fraction": 0.25, "seed": 1})");
  ASSERT_EQ(created.status, 202) << created.body;
  const std::string id = std::to_string(created.json().at("id").as_int64());
  const json::value done = wait_job(
      id, [](const json::value& j) { return j.at("finished_at").is_string(); }, 240s);
  ASSERT_TRUE(state_is(done, "succeeded")) << json::serialize(done);
  EXPECT_EQ(done.at("progress").at("epoch").as_int64(), 2);
  const std::int64_t version = done.at("result_version").as_int64();

  auto model = call("GET", "/v1/models/production");
  ASSERT_EQ(model.status, 200) << model.body;
  const json::value m = model.json();
  EXPECT_EQ(m.at("version").as_int64(), version);
  EXPECT_EQ(m.at("platforms").as_array()[0].as_string(), "x16");
  const double top1 = m.at("metrics").at("x16").at("top1").as_double();
  EXPECT_GT(top1, 0.0);
  EXPECT_LE(top1, 1.0);
  EXPECT_GT(m.at("metrics").at("x16").at("eval_tasks").as_int64(), 0);
  EXPECT_GT(m.at("metrics").at("x16").at("tuning_proxy").as_double(), 0.0);  // counted tasks: a ratio > 0
  EXPECT_GT(m.at("metrics").at("x16").at("random_tuning_proxy").as_double(), 0.0);
  EXPECT_EQ(m.at("status").as_string(), "promoted");  // production by rule, and says so
  EXPECT_NE(json::serialize(m.at("status_reasons")).find("first version"), std::string::npos);
  auto weights = call("GET", "/v1/models/production/weights");
  ASSERT_EQ(weights.status, 200);
  EXPECT_EQ(sha256_hex(weights.body), m.at("weights_sha256").as_string());

  // tcld_jobs is read from the database every --metrics-refresh-ms, not per scrape.
  std::string metrics;
  for (int i = 0; i < 100 && metrics.find("tcld_jobs{state=\"succeeded\"} 1") == std::string::npos; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    metrics = http_get(tcld_->port(), "/metrics").body;
  }
  EXPECT_NE(metrics.find("tcld_training_epoch{platform=\"x16\"} 2"), std::string::npos);
  EXPECT_NE(metrics.find("tcld_jobs{state=\"succeeded\"} 1"), std::string::npos);
}

// Bad options are refused before a job exists: 400 naming the option, and
// the platform's job list stays empty.
TEST_F(TrainingTest, BadOptionsAreRefusedWithTheReason) {
  start({"--train-workers", "1"});
  auto refused = call("POST", "/v1/platforms/x16/jobs", R"({"kind": "train", "epochz": 2})");
  ASSERT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(refused.json().at("error").at("code").as_string(), "INVALID_ARGUMENT");
  EXPECT_NE(std::string(refused.json().at("error").at("message").as_string()).find("epochz"), std::string::npos)
      << refused.body;
  auto wrong_kind = call("POST", "/v1/platforms/x16/jobs", R"({"kind": "train", "margin": 0.1})");  // distill only
  ASSERT_EQ(wrong_kind.status, 400) << wrong_kind.body;
  EXPECT_NE(wrong_kind.body.find("margin"), std::string::npos) << wrong_kind.body;
  EXPECT_TRUE(call("GET", "/v1/platforms/x16/jobs").json().at("jobs").as_array().empty());
}

TEST_F(TrainingTest, AKilledWorkersJobIsRetriedAndFinishes) {
  start({"--train-workers", "0"});  // training only in separate worker processes
  auto created = call("POST", "/v1/platforms/x16/jobs",
                      R"({"kind": "train", "epochs": 40, "max_records": 2000, "time_budget_s": 4})");
  ASSERT_EQ(created.status, 202);
  const std::string id = std::to_string(created.json().at("id").as_int64());

  TcldProcess first(url_, {"--job-lease-ms", "2000", "--train-threads", "1"}, "worker");
  ASSERT_TRUE(first.start()) << first.log();
  json::value running = wait_job(
      id, [](const json::value& j) { return state_is(j, "running"); }, 60s);
  ASSERT_TRUE(state_is(running, "running")) << json::serialize(running);
  first.kill();  // SIGKILL mid-job: no finish, no release

  TcldProcess second(url_, {"--job-lease-ms", "2000", "--train-threads", "1"}, "worker");
  ASSERT_TRUE(second.start()) << second.log();
  const json::value done = wait_job(
      id, [](const json::value& j) { return j.at("finished_at").is_string(); }, 240s);
  ASSERT_TRUE(state_is(done, "succeeded")) << json::serialize(done) << second.log();
  EXPECT_EQ(done.at("attempts").as_int64(), 2);
  EXPECT_EQ(call("GET", "/v1/models").json().at("versions").as_array().size(), 1u);  // no half version left behind
  EXPECT_EQ(second.stop(), 0);
}

TEST_F(TrainingTest, CancelStopsARunningJob) {
  start({"--train-workers", "1", "--train-threads", "1", "--job-lease-ms", "2000"});
  auto created = call("POST", "/v1/platforms/x16/jobs", R"({"kind": "train", "epochs": 500, "max_records": 2000})");
  ASSERT_EQ(created.status, 202);
  const std::string id = std::to_string(created.json().at("id").as_int64());
  ASSERT_TRUE(state_is(wait_job(
                           id, [](const json::value& j) { return state_is(j, "running"); }, 60s),
                       "running"));
  ASSERT_EQ(call("POST", "/v1/jobs/" + id + "/cancel").status, 200);
  const json::value done = wait_job(
      id, [](const json::value& j) { return j.at("finished_at").is_string(); }, 60s);
  EXPECT_TRUE(state_is(done, "cancelled")) << json::serialize(done);
  EXPECT_EQ(call("GET", "/v1/models").json().at("versions").as_array().size(), 0u);
}

}  // namespace
}  // namespace tcl::testing
