// tests/api/inference_v2_test.cc — the Open Inference Protocol handlers
// (api/handlers/inference_v2.h) called directly, against a real PostgreSQL
// and a fresh student stored as version 1 (production): health, metadata,
// infer (whose scores equal /v1/predict's for the same programs: one scoring
// home), and the protocol's {"error": "<message>"} answers.
#include "api/handlers/inference_v2.h"

#include <gtest/gtest.h>

#include <prometheus/registry.h>

#include <memory>
#include <string>
#include <vector>

#include "api/handlers/predict.h"
#include "core/features.h"
#include "registry/model_store.h"
#include "tests/api/handler_test_env.h"
#include "tests/lib/model_fixture.h"
#include "tests/lib/model_versions.h"
#include "tests/lib/shared_data.h"

namespace tcl::api {
namespace {

namespace json = boost::json;
using testing::body_json;
using testing::HandlerRequest;

class InferenceV2HandlersTest : public testing::HandlerDbTest {
 protected:
  void SetUp() override {
    HandlerDbTest::SetUp();
    store_ = std::make_unique<registry::ModelStore>(*pool_);
    ASSERT_NE(tcl::testing::add_version(*store_, tcl::testing::fresh_checkpoint(9)), 0);
    cache_ = std::make_unique<ModelCache>(*store_, ModelCacheOptions{});
    descriptors_ = std::make_unique<DescriptorCache>(*platforms_);
    metrics_ = std::make_unique<InferMetrics>(registry_);
    svc_ = std::make_unique<InferenceV2Services>(
        InferenceV2Services{*store_, *cache_, *descriptors_, *metrics_, options_});
  }
  // An infer body for `lines`' programs, padded to L = 72 with their lengths.
  static std::string infer_body(const std::vector<std::string>& lines, const std::string& platform) {
    core::RecordParser parser;
    json::array tokens, lengths;
    for (const std::string& l : lines) {
      core::Record r;
      EXPECT_TRUE(parser.parse(l, &r).is_ok());
      std::vector<float> t(72 * core::kTokenDim);
      lengths.emplace_back(core::encode_tokens(r.steps, 72, t.data()));
      for (float x : t) tokens.emplace_back(static_cast<double>(x));
    }
    json::array shape{lines.size(), 72, core::kTokenDim};
    json::object in_tokens{{"name", "tokens"}, {"datatype", "FP32"}, {"shape", shape}, {"data", tokens}};
    json::object in_lengths{
        {"name", "lengths"}, {"datatype", "INT64"}, {"shape", json::array{lines.size()}}, {"data", lengths}};
    return json::serialize(json::object{{"id", "r1"},
                                        {"parameters", json::object{{"platform", platform}}},
                                        {"inputs", json::array{in_tokens, in_lengths}}});
  }
  Response infer(const std::string& body, std::map<std::string, std::string> params = {{"name", "tcl"}}) {
    HandlerRequest req(body, std::move(params));
    return handle_v2_infer(req, *svc_);
  }

  std::unique_ptr<registry::ModelStore> store_;
  std::unique_ptr<ModelCache> cache_;
  std::unique_ptr<DescriptorCache> descriptors_;
  prometheus::Registry registry_;
  std::unique_ptr<InferMetrics> metrics_;
  InferenceV2Options options_;
  std::unique_ptr<InferenceV2Services> svc_;
};

TEST_F(InferenceV2HandlersTest, InferScoresAsPredictDoes) {
  const std::vector<std::string> lines = tcl::testing::shared_data_lines("x86-16c", 3);
  const Response r = infer(infer_body(lines, "x16"));
  ASSERT_EQ(r.status, http::status::ok) << r.body.substr(0, 500);
  const json::object answer = body_json(r);
  EXPECT_EQ(answer.at("model_name").as_string(), "tcl");
  EXPECT_EQ(answer.at("model_version").as_string(), "1");
  EXPECT_EQ(answer.at("id").as_string(), "r1");
  EXPECT_TRUE(answer.at("parameters").at("platform_covered").as_bool());
  const json::array& data = answer.at("outputs").at(0).at("data").as_array();
  ASSERT_EQ(data.size(), 3u);
  EXPECT_EQ(metrics_->programs.Value(), 3);

  prometheus::Registry predict_registry;
  PredictMetrics predict_metrics(predict_registry);
  PredictServices predict{*descriptors_, *cache_, predict_metrics, {}};
  json::array records;
  for (const std::string& l : lines) records.emplace_back(l);
  HandlerRequest req(json::serialize(json::object{{"platform", "x16"}, {"records", records}}));
  const Response p = handle_predict(req, predict);
  ASSERT_EQ(p.status, http::status::ok) << p.body;
  const json::object predicted = body_json(p);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(data[i].as_double(), predicted.at("scores").at(i).as_double(), 1e-5) << i;
  }
}

TEST_F(InferenceV2HandlersTest, ErrorsAreTheProtocolsShape) {
  const std::vector<std::string> lines = tcl::testing::shared_data_lines("x86-16c", 1);
  Response r = infer(infer_body(lines, "y16"));
  EXPECT_EQ(r.status, http::status::not_found);
  EXPECT_TRUE(body_json(r).at("error").is_string()) << r.body;

  r = infer(R"({"parameters": {"platform": "x16"}, "inputs": []})");
  EXPECT_EQ(r.status, http::status::bad_request);
  EXPECT_EQ(body_json(r).at("error").as_string(), "input 'tokens' (FP32 [n, L, D]) is required");

  r = infer(infer_body(lines, "x16"), {{"name", "other"}});
  EXPECT_EQ(r.status, http::status::not_found);
  EXPECT_EQ(body_json(r).at("error").as_string(), "unknown model 'other'; this server serves one model, 'tcl'");

  r = infer(infer_body(lines, "x16"), {{"name", "tcl"}, {"version", "abc"}});
  EXPECT_EQ(r.status, http::status::not_found);
  EXPECT_EQ(metrics_->programs.Value(), 0);
}

TEST_F(InferenceV2HandlersTest, MetadataAndReadiness) {
  HandlerRequest meta({}, {{"name", "tcl"}});
  Response r = handle_v2_model_metadata(meta, *svc_);
  ASSERT_EQ(r.status, http::status::ok) << r.body;
  const json::object m = body_json(r);
  EXPECT_EQ(m.at("versions").as_array().at(0).as_string(), "1");
  EXPECT_EQ(m.at("platform").as_string(), "tcl_mamba");
  EXPECT_EQ(m.at("parameters").at("token_dim").as_int64(), core::kTokenDim);
  EXPECT_EQ(m.at("inputs").at(0).at("shape").at(2).as_int64(), core::kTokenDim);

  HandlerRequest ready({}, {{"name", "tcl"}, {"version", "1"}});
  r = handle_v2_model_ready(ready, *svc_);
  EXPECT_EQ(r.status, http::status::ok);
  EXPECT_TRUE(r.body.empty());
  HandlerRequest missing({}, {{"name", "tcl"}, {"version", "2"}});
  r = handle_v2_model_ready(missing, *svc_);
  EXPECT_EQ(r.status, http::status::not_found);
  EXPECT_EQ(body_json(r).at("error").as_string(), "model 'tcl' has no version 2");

  HandlerRequest any;
  EXPECT_EQ(handle_v2_live(any).status, http::status::ok);
  InferenceV2Options failing;
  failing.readiness = [] { return std::vector<ReadinessCheck>{{"database", false, "down", ""}}; };
  EXPECT_EQ(handle_v2_ready(any, failing).status, http::status::bad_request);
  EXPECT_EQ(handle_v2_ready(any, options_).status, http::status::ok);  // no checks: ready
  EXPECT_EQ(body_json(handle_v2_server_metadata(any)).at("name").as_string(), "tcld");
}

}  // namespace
}  // namespace tcl::api
