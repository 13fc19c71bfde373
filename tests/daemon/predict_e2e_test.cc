// POST /v1/predict through the real tcld: scores come from the version an
// alias names (the fast path in the daemon must agree with the torch forward
// of the same checkpoint computed here), an alias move is followed through
// NOTIFY, and every documented error has its status and its details.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <cmath>
#include <thread>

#include "core/features.h"
#include "core/record.h"
#include "registry/model_store.h"
#include "registry/pg_pool.h"
#include "tests/lib/http_client.h"
#include "tests/lib/model_fixture.h"
#include "tests/lib/pg_cluster.h"
#include "tests/lib/shared_data.h"
#include "tests/lib/tcld_process.h"
#include "trainer/cost_model.h"

namespace tcl::testing {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// What the daemon should answer: the torch forward of the checkpoint on the
// platform's descriptor, each program padded to the model's max_len.
std::vector<float> expected_scores(const std::string& weights, const std::vector<std::string>& lines,
                                   const std::array<std::int64_t, 8>& hw) {
  auto model = trainer::CostModel::load(weights);
  if (!model) throw std::runtime_error(model.status().message());
  const auto L = (*model)->config().max_len;
  const std::size_t n = lines.size();
  std::vector<float> tokens(n * L * core::kTokenDim), descriptor(core::kHardwareDim), scores(n);
  std::vector<std::int32_t> lengths(n);
  core::encode_hardware(core::HardwareParams{hw[0], hw[1], hw[2], hw[3], hw[4], hw[5], hw[6], hw[7]}, kServingTarget,
                        descriptor.data());
  for (std::size_t i = 0; i < n; ++i) {
    auto r = core::parse_record(lines[i]);
    if (!r) throw std::runtime_error(r.status().message());
    lengths[i] = core::encode_tokens(r->steps, static_cast<int>(L), tokens.data() + i * L * core::kTokenDim);
  }
  trainer::FeatureBatch batch{static_cast<std::int64_t>(n), L, tokens, lengths, descriptor};
  if (Status s = (*model)->predict(batch, scores); !s) throw std::runtime_error(s.message());
  return scores;
}

class PredictTest : public ServingTest {
 protected:
  void SetUp() override { start(700, {"--metrics-names"}); }  // more than one 512-program pass
  // {"platform": "x16", <model>, "records": [the lines as objects]}.
  std::string records_body(const std::string& model_field, std::size_t n) {
    std::string body = R"({"platform": "x16", )" + model_field + R"("records": [)";
    for (std::size_t i = 0; i < n; ++i) {
      if (i > 0) body += ',';
      body += lines_[i];
    }
    return body + "]}";
  }

  const std::array<std::int64_t, 8> hw_ = kServingHardware;
};

void expect_scores_match(const json::value& answer, const std::vector<float>& expected) {
  const auto& scores = answer.at("scores").as_array();
  ASSERT_EQ(scores.size(), expected.size());
  float scale = 1e-6f;
  for (float e : expected) scale = std::max(scale, std::fabs(e));
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double s = scores[i].to_number<double>();
    ASSERT_TRUE(std::isfinite(s)) << i;
    ASSERT_NEAR(s, expected[i], 1e-4 * scale) << "program " << i;
  }
}

TEST_F(PredictTest, NoVersionYetIs404) {
  auto r = call("POST", "/v1/predict", records_body("", 3), reader_);
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_NE(r.body.find("train one first"), std::string::npos) << r.body;
}

TEST_F(PredictTest, ScoresEveryRecordWithTheProductionVersion) {
  const std::string w1 = fresh_checkpoint(1, 12);  // shorter than many records: some are truncated
  const std::int64_t v1 = add_version(w1);
  const std::vector<float> expected = expected_scores(w1, lines_, hw_);

  auto r = call("POST", "/v1/predict", records_body("", lines_.size()), reader_);
  ASSERT_EQ(r.status, 200) << r.body;
  const json::value answer = r.json();
  EXPECT_EQ(answer.at("model_version").as_int64(), v1);
  EXPECT_EQ(answer.at("platform").as_string(), "x16");
  EXPECT_TRUE(answer.at("platform_covered").as_bool());
  expect_scores_match(answer, expected);
  std::int64_t long_ones = 0;
  for (const auto& l : lines_) long_ones += core::parse_record(l)->steps.size() > 12 ? 1 : 0;
  ASSERT_GT(long_ones, 0);
  EXPECT_EQ(answer.at("truncated").as_int64(), long_ones);

  // The same programs as record lines (strings) and as {workload_key, steps}.
  json::array as_lines, as_programs;
  for (std::size_t i = 0; i < 40; ++i) {
    as_lines.emplace_back(lines_[i]);
    const json::value rec = json::parse(lines_[i]);
    as_programs.emplace_back(
        json::object{{"workload_key", rec.at("i").at(0).at(0)}, {"steps", rec.at("i").at(1).at(1)}});
  }
  const std::vector<float> first40(expected.begin(), expected.begin() + 40);
  auto by_lines =
      call("POST", "/v1/predict",
           json::serialize(json::object{{"platform", "x16"}, {"model", "production"}, {"records", as_lines}}), reader_);
  ASSERT_EQ(by_lines.status, 200) << by_lines.body;
  expect_scores_match(by_lines.json(), first40);
  auto by_programs =
      call("POST", "/v1/predict",
           json::serialize(json::object{{"platform", "x16"}, {"model", std::to_string(v1)}, {"programs", as_programs}}),
           reader_);
  ASSERT_EQ(by_programs.status, 200) << by_programs.body;
  expect_scores_match(by_programs.json(), first40);

  // An empty batch is a valid (empty) answer; /readyz sees the model loaded.
  auto empty = call("POST", "/v1/predict", R"({"platform": "x16", "records": []})", reader_);
  ASSERT_EQ(empty.status, 200) << empty.body;
  EXPECT_EQ(empty.json().at("scores").as_array().size(), 0u);
  EXPECT_EQ(http_get(tcld_->port(), "/readyz").status, 200);

  // The metrics count what was scored.
  auto metrics = http_get(tcld_->port(), "/metrics");
  EXPECT_NE(metrics.body.find("tcld_predict_programs_total " + std::to_string(lines_.size() + 80)), std::string::npos)
      << metrics.body.substr(0, 2000);
  EXPECT_NE(metrics.body.find("tcld_model_alias_version{alias=\"production\"} " + std::to_string(v1)),
            std::string::npos);
}

TEST_F(PredictTest, AnAliasMoveIsFollowedAndOldVersionsStayReachable) {
  const std::string w1 = fresh_checkpoint(1, 72), w2 = fresh_checkpoint(2, 72);
  const std::int64_t v1 = add_version(w1);
  const std::int64_t v2 = add_version(w2);  // a candidate: production stays on v1
  const std::vector<std::string> few(lines_.begin(), lines_.begin() + 50);
  lines_ = few;
  ASSERT_EQ(call("POST", "/v1/predict", records_body("", 50), reader_).json().at("model_version").as_int64(), v1);

  ASSERT_EQ(call("PUT", "/v1/aliases/production", R"({"version": )" + std::to_string(v2) + "}", admin_).status, 200);
  // NOTIFY reaches the daemon's listener, which loads v2 and moves the alias.
  json::value answer;
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (std::chrono::steady_clock::now() < deadline) {
    answer = call("POST", "/v1/predict", records_body("", 50), reader_).json();
    if (answer.at("model_version").as_int64() == v2) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(answer.at("model_version").as_int64(), v2);
  expect_scores_match(answer, expected_scores(w2, lines_, hw_));

  // v1 by number, and a new alias the daemon has not heard of yet.
  auto old = call("POST", "/v1/predict", records_body(R"("model": ")" + std::to_string(v1) + "\", ", 50), reader_);
  ASSERT_EQ(old.status, 200) << old.body;
  expect_scores_match(old.json(), expected_scores(w1, lines_, hw_));
  ASSERT_EQ(call("PUT", "/v1/aliases/canary", R"({"version": )" + std::to_string(v1) + "}", admin_).status, 200);
  auto canary = call("POST", "/v1/predict", records_body(R"("model": "canary", )", 50), reader_);
  ASSERT_EQ(canary.status, 200) << canary.body;
  EXPECT_EQ(canary.json().at("model_version").as_int64(), v1);
}

TEST_F(PredictTest, DocumentedErrors) {
  add_version(fresh_checkpoint(1, 72));
  const auto expect_error = [&](const std::string& body, int status, const std::string& needle) {
    auto r = call("POST", "/v1/predict", body, reader_);
    EXPECT_EQ(r.status, status) << body << " -> " << r.body;
    EXPECT_NE(r.body.find(needle), std::string::npos) << body << " -> " << r.body;
    return r;
  };
  expect_error(R"({"platform": "nope", "records": []})", 404, "nope");
  expect_error(R"({"platform": "x16", "model": "99", "records": []})", 404, "99");
  expect_error(R"({"platform": "x16", "model": "no-such-alias", "records": []})", 404, "no-such-alias");
  expect_error(R"({"records": []})", 400, "platform");
  expect_error(R"({"platform": "x16"})", 400, "exactly one of 'records' or 'programs'");
  expect_error(R"({"platform": "x16", "records": [], "programs": []})", 400, "exactly one");
  expect_error(R"({"platform": "x16", "records": {}})", 400, "must be an array");
  expect_error(R"({"platform": "x16", "records": [)", 400, "JSON");

  // A bad record names its index and the reason; nothing is scored.
  const std::string bad = R"({"platform": "x16", "records": [)" + lines_[0] + "," + lines_[1] +
                          R"(, {"i": [["k", "llvm"], [[], [["SP", 0]]]], "r": [[1e-3], 0, 1, 1], "v": "v0.6"}]})";
  auto r = expect_error(bad, 400, "records[2]");
  const json::value details = r.json().at("error").at("details");
  EXPECT_EQ(details.at("index").as_int64(), 2);
  EXPECT_NE(details.at("reason").as_string().find("SP"), std::string::npos) << r.body;
  auto p = expect_error(R"({"platform": "x16", "programs": [{"workload_key": "k", "steps": [["SP", 0, 0, 8, [2], 1]]},
                                                            {"steps": []}]})",
                        400, "programs[1]");
  EXPECT_EQ(p.json().at("error").at("details").at("index").as_int64(), 1);
  expect_error(R"({"platform": "x16", "records": [42]})", 400, "records[0]");
  // Step kinds outside TVM's set and negative ids are refused, naming the field (issue 18, finding 7).
  expect_error(R"({"platform": "x16", "programs": [{"workload_key": "k", "steps": [["CI", 1], ["ZZ", 0]]}]})", 400,
               R"(programs[0]: steps[1][0]: step kind \"ZZ\")");
  expect_error(
      R"({"platform": "x16", "records": [{"i": [["k", "llvm"], [[], [["CI", -1]]]], "r": [[1e-3], 0, 1, 1]}]})", 400,
      "records[0]: i[1][1][0][1]: CI stage_id must be >= 0, got -1");

  // Reading needs a token; any scope may predict.
  EXPECT_EQ(call("POST", "/v1/predict", R"({"platform": "x16", "records": []})", "").status, 401);
}

// Issue 45 #12: predict is served from memory, and a token checked before a
// database outage keeps working through it (the token cache's stale answer);
// a token never seen before still gets 503, never a 200.
TEST_F(PredictTest, AKnownTokenKeepsPredictingThroughADatabaseOutage) {
  add_version(fresh_checkpoint(1, 12));
  const std::string body = records_body("", 3);
  ASSERT_EQ(call("POST", "/v1/predict", body, reader_).status, 200);  // token, descriptor and model now cached
  const std::string stranger = token("stranger", "read");
  PgCluster::shared().stop();
  std::this_thread::sleep_for(5500ms);  // past the token cache's 5 s ttl
  auto during = call("POST", "/v1/predict", body, reader_);
  auto unseen = call("POST", "/v1/predict", body, stranger);
  PgCluster::shared().start();
  EXPECT_EQ(during.status, 200) << during.body;
  EXPECT_EQ(during.json().at("scores").as_array().size(), 3u) << during.body;
  EXPECT_EQ(unseen.status, 503) << unseen.body;
}

}  // namespace
}  // namespace tcl::testing
