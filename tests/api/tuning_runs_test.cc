// tests/api/tuning_runs_test.cc — the tuning-run handlers (api/handlers/tuning_runs.h)
// called directly, against a real PostgreSQL: a PUT creates (201) then replaces
// (200, the same body again a no-op), GET lists the platform's runs with their
// rounds, and every bad part is a 4xx naming its field.
#include "api/handlers/tuning_runs.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/api/handler_test_env.h"

namespace tcl::api {
namespace {

namespace json = boost::json;
using testing::body_json;
using testing::HandlerRequest;

constexpr const char* kTwoRounds = R"({"network": "resnet50", "model": "lineage+online", "seed": 1, "rounds": [
    {"measured": 16, "network_seconds": null, "wall_seconds": 1.5},
    {"measured": 32, "network_seconds": 0.0125, "wall_seconds": 3}]})";

class TuningRunHandlersTest : public testing::HandlerDbTest {
 protected:
  void SetUp() override {
    HandlerDbTest::SetUp();
    runs_ = std::make_unique<registry::TuningRunStore>(*pool_);
  }
  Response put(const std::string& body, const std::string& id = "tune-1", const std::string& platform = "x16") {
    HandlerRequest req(body, {{"name", platform}, {"run_id", id}});
    return handle_put_tuning_run(req, *platforms_, *runs_);
  }
  std::string field_of(const Response& r) {
    const json::object b = body_json(r);
    const json::value* d = b.contains("error") ? b.at("error").as_object().if_contains("details") : nullptr;
    return d != nullptr && d->is_object() && d->as_object().contains("field")
               ? std::string(d->as_object().at("field").as_string())
               : "";
  }
  std::unique_ptr<registry::TuningRunStore> runs_;
};

TEST_F(TuningRunHandlersTest, PutCreatesThenReplacesAndGetListsTheRounds) {
  const Response created = put(kTwoRounds);
  ASSERT_EQ(created.status, http::status::created) << created.body;
  EXPECT_EQ(created.headers.at("Location"), "/v1/platforms/x16/tuning-runs/tune-1");
  const Response again = put(kTwoRounds);
  ASSERT_EQ(again.status, http::status::ok) << again.body;
  EXPECT_EQ(body_json(again).at("rounds"), body_json(created).at("rounds"));

  HandlerRequest list({}, {{"name", "x16"}});
  const Response r = handle_list_tuning_runs(list, *platforms_, *runs_);
  ASSERT_EQ(r.status, http::status::ok) << r.body;
  const json::object body = body_json(r);
  const json::array& runs = body.at("runs").as_array();
  ASSERT_EQ(runs.size(), 1u);
  const json::object& run = runs[0].as_object();
  EXPECT_EQ(run.at("id").as_string(), "tune-1");
  EXPECT_EQ(run.at("platform").as_string(), "x16");
  EXPECT_EQ(run.at("network").as_string(), "resnet50");
  EXPECT_EQ(run.at("model").as_string(), "lineage+online");
  EXPECT_EQ(run.at("seed").as_int64(), 1);
  const json::array& rounds = run.at("rounds").as_array();
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_TRUE(rounds[0].at("network_seconds").is_null());
  EXPECT_EQ(rounds[1].at("measured").as_int64(), 32);
  EXPECT_DOUBLE_EQ(rounds[1].at("network_seconds").to_number<double>(), 0.0125);
  EXPECT_DOUBLE_EQ(rounds[1].at("wall_seconds").to_number<double>(), 3.0);
}

TEST_F(TuningRunHandlersTest, BadPartsAre4xxNamingTheField) {
  const auto expect = [&](const Response& r, http::status status, const std::string& field) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(field_of(r), field) << r.body;
  };
  expect(put(kTwoRounds, "-bad"), http::status::bad_request, "run_id");
  expect(put("[1]"), http::status::bad_request, "");
  expect(put(R"({"model": "m", "seed": 1, "rounds": []})"), http::status::bad_request, "network");
  expect(put(R"({"network": "", "model": "m", "seed": 1, "rounds": []})"), http::status::bad_request, "network");
  expect(put(R"({"network": "n", "seed": 1, "rounds": []})"), http::status::bad_request, "model");
  expect(put(R"({"network": "n", "model": "m", "seed": -1, "rounds": []})"), http::status::bad_request, "seed");
  expect(put(R"({"network": "n", "model": "m", "seed": 1, "rounds": {}})"), http::status::bad_request, "rounds");
  expect(put(R"({"network": "n", "model": "m", "seed": 1, "rounds": [{"measured": -1, "wall_seconds": 1}]})"),
         http::status::bad_request, "rounds[0].measured");
  expect(put(R"({"network": "n", "model": "m", "seed": 1, "rounds": [{"measured": 1, "network_seconds": "x",
             "wall_seconds": 1}]})"),
         http::status::bad_request, "rounds[0].network_seconds");
  expect(put(R"({"network": "n", "model": "m", "seed": 1, "rounds": [{"measured": 1, "network_seconds": null}]})"),
         http::status::bad_request, "rounds[0].wall_seconds");
  std::string many = R"({"network": "n", "model": "m", "seed": 1, "rounds": [)";
  for (std::size_t i = 0; i <= kMaxTuningRounds; ++i) many += std::string(i ? "," : "") + "0";
  expect(put(many + "]}"), http::status::payload_too_large, "rounds");
  expect(put(kTwoRounds, "tune-1", "nowhere"), http::status::not_found, "");
  HandlerRequest list({}, {{"name", "nowhere"}});
  EXPECT_EQ(handle_list_tuning_runs(list, *platforms_, *runs_).status, http::status::not_found);
}

}  // namespace
}  // namespace tcl::api
