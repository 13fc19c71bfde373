// tests/api/predict_test.cc — POST /v1/predict's handler
// (api/handlers/predict.h) called directly, against a real PostgreSQL and a
// fresh student stored as version 1 (production): records and programs
// score alike, the answer's fields, the errors (400 naming the field or the
// program, 404 naming the platform or model, 413 past max_programs), and the
// metrics count answered programs only.
#include "api/handlers/predict.h"

#include <gtest/gtest.h>

#include <prometheus/registry.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

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

class PredictHandlerTest : public testing::HandlerDbTest {
 protected:
  void SetUp() override {
    HandlerDbTest::SetUp();
    store_ = std::make_unique<registry::ModelStore>(*pool_);
    version_ = tcl::testing::add_version(*store_, tcl::testing::fresh_checkpoint(5));
    ASSERT_NE(version_, 0);
    cache_ = std::make_unique<ModelCache>(*store_, ModelCacheOptions{});
    descriptors_ = std::make_unique<DescriptorCache>(*platforms_);
    metrics_ = std::make_unique<PredictMetrics>(registry_);
    lines_ = tcl::testing::shared_data_lines("x86-16c", 3);
  }
  Response predict(const std::string& body, std::size_t max_programs = 65'536) {
    PredictRouteOptions options;
    options.max_programs = max_programs;
    PredictServices svc{*descriptors_, *cache_, *metrics_, options};
    HandlerRequest req(body);
    return handle_predict(req, svc);
  }
  // {"platform": "x16", "records": [the lines]}
  std::string records_body() const {
    json::array records;
    for (const std::string& l : lines_) records.emplace_back(l);
    return json::serialize(json::object{{"platform", "x16"}, {"records", records}});
  }

  std::unique_ptr<registry::ModelStore> store_;
  std::unique_ptr<ModelCache> cache_;
  std::unique_ptr<DescriptorCache> descriptors_;
  prometheus::Registry registry_;
  std::unique_ptr<PredictMetrics> metrics_;
  std::vector<std::string> lines_;
  std::int64_t version_ = 0;
};

TEST_F(PredictHandlerTest, RecordsAndProgramsScoreAlike) {
  const Response by_records = predict(records_body());
  ASSERT_EQ(by_records.status, http::status::ok) << by_records.body;
  const json::object a = body_json(by_records);
  EXPECT_EQ(a.at("model_version").as_int64(), version_);
  EXPECT_EQ(a.at("platform").as_string(), "x16");
  EXPECT_TRUE(a.at("platform_covered").as_bool());
  EXPECT_FALSE(a.at("platform_adapter").as_bool());
  EXPECT_EQ(a.at("truncated").as_int64(), 0);
  const json::array& scores = a.at("scores").as_array();
  ASSERT_EQ(scores.size(), 3u);

  json::array programs;
  for (const std::string& l : lines_) {
    const json::value r = json::parse(l);
    programs.emplace_back(json::object{{"workload_key", r.at("i").at(0).at(0)}, {"steps", r.at("i").at(1).at(1)}});
  }
  const Response by_programs =
      predict(json::serialize(json::object{{"platform", "x16"}, {"model", "1"}, {"programs", std::move(programs)}}));
  ASSERT_EQ(by_programs.status, http::status::ok) << by_programs.body;
  const json::object b = body_json(by_programs);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(std::isfinite(scores[i].as_double()));
    EXPECT_EQ(b.at("scores").at(i).as_double(), scores[i].as_double()) << i;
  }
  EXPECT_EQ(metrics_->programs.Value(), 6);
}

TEST_F(PredictHandlerTest, BadBodiesAre400NamingTheFieldOrProgram) {
  Response r = predict(R"({"platform": "x16", "records": [], "programs": []})");
  EXPECT_EQ(r.status, http::status::bad_request);
  EXPECT_EQ(body_json(r).at("error").at("message").as_string(), "give exactly one of 'records' or 'programs'");

  r = predict(R"({"platform": "x16", "programs": {}})");
  EXPECT_EQ(r.status, http::status::bad_request);
  EXPECT_EQ(body_json(r).at("error").at("details").at("field").as_string(), "programs");

  r = predict(R"({"records": []})");
  EXPECT_EQ(body_json(r).at("error").at("details").at("field").as_string(), "platform");

  r = predict(R"({"platform": "x16", "records": [)" + json::serialize(json::string(lines_[0])) +
              R"(, "not a record"]})");
  EXPECT_EQ(r.status, http::status::bad_request);
  const json::object bad = body_json(r);
  EXPECT_EQ(bad.at("error").at("details").at("field").as_string(), "records");
  EXPECT_EQ(bad.at("error").at("details").at("index").as_int64(), 1);
  EXPECT_EQ(metrics_->programs.Value(), 0);  // nothing answered, nothing counted
}

TEST_F(PredictHandlerTest, UnknownPlatformOrModelIs404AndTooManyProgramsIs413) {
  Response r = predict(R"({"platform": "y16", "records": []})");
  EXPECT_EQ(r.status, http::status::not_found);
  EXPECT_EQ(body_json(r).at("error").at("details").at("platform").as_string(), "y16");

  r = predict(R"({"platform": "x16", "model": "staging", "records": []})");
  EXPECT_EQ(r.status, http::status::not_found);
  EXPECT_EQ(body_json(r).at("error").at("details").at("model").as_string(), "staging");

  r = predict(records_body(), /*max_programs=*/2);
  EXPECT_EQ(r.status, http::status::payload_too_large);
}

}  // namespace
}  // namespace tcl::api
