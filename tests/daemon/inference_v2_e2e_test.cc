// The Open Inference Protocol (KServe v2) routes through the real tcld:
// tokens encoded here by core's featurizer score the same as /v1/predict on
// the same records; the metadata describes the version's tensors; health
// follows the database; every documented error has its status and the
// protocol's {"error": "<message>"} body. The bad requests below stay within
// api/openapi.yaml's request schemas (values, not types, are wrong), so they
// reach tcld through the contract proxy too (tests/lib/tcld_process.h).
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

namespace tcl::testing {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// Records featurized the way a client would: core's step tokens, cut to
// max_len, padded to the longest program of the batch.
struct Encoded {
  std::int64_t n = 0, L = 0;
  std::vector<float> tokens;  // [n, L, kTokenDim]
  std::vector<std::int32_t> lengths;
};

Encoded encode(const std::vector<std::string>& lines, std::int64_t max_len) {
  std::vector<core::Record> records;
  Encoded e;
  e.n = static_cast<std::int64_t>(lines.size());
  e.L = 1;
  for (const auto& l : lines) {
    auto r = core::parse_record(l);
    if (!r) throw std::runtime_error(r.status().message());
    e.L = std::max<std::int64_t>(e.L, std::min<std::int64_t>(static_cast<std::int64_t>(r->steps.size()), max_len));
    records.push_back(std::move(*r));
  }
  const std::size_t stride = static_cast<std::size_t>(e.L) * core::kTokenDim;
  e.tokens.assign(records.size() * stride, 0.0f);
  for (const auto& r : records) {
    e.lengths.push_back(
        core::encode_tokens(r.steps, static_cast<int>(e.L), e.tokens.data() + e.lengths.size() * stride));
  }
  return e;
}

json::object tensor(std::string_view name, std::string_view datatype, json::array shape, json::array data) {
  return json::object{{"name", name}, {"datatype", datatype}, {"shape", std::move(shape)}, {"data", std::move(data)}};
}

json::array flat(const std::vector<float>& v) {
  json::array a;
  a.reserve(v.size());
  for (float x : v) a.emplace_back(static_cast<double>(x));
  return a;
}

json::array flat(const std::vector<std::int32_t>& v) {
  json::array a;
  for (auto x : v) a.emplace_back(static_cast<std::int64_t>(x));
  return a;
}

// tokens as [n][L][D] nested arrays.
json::array nested(const Encoded& e) {
  json::array programs;
  for (std::int64_t i = 0; i < e.n; ++i) {
    json::array rows;
    for (std::int64_t t = 0; t < e.L; ++t) {
      json::array row;
      for (int d = 0; d < core::kTokenDim; ++d) {
        row.emplace_back(static_cast<double>(e.tokens[(i * e.L + t) * core::kTokenDim + d]));
      }
      rows.emplace_back(std::move(row));
    }
    programs.emplace_back(std::move(rows));
  }
  return programs;
}

json::object infer_body(const Encoded& e, std::string_view platform = "x16", bool with_lengths = true) {
  json::array inputs{tensor("tokens", "FP32", json::array{e.n, e.L, core::kTokenDim}, flat(e.tokens))};
  if (with_lengths) inputs.emplace_back(tensor("lengths", "INT64", json::array{e.n}, flat(e.lengths)));
  return json::object{{"parameters", json::object{{"platform", platform}}}, {"inputs", std::move(inputs)}};
}

class InferenceV2Test : public ServingTest {
 protected:
  void SetUp() override { start(300); }
  HttpResult infer(const json::object& body, const std::string& target = "/v2/models/tcl/infer") {
    return call("POST", target, json::serialize(body), reader_);
  }
  // /v1/predict's scores for the first n lines, from `model`.
  std::vector<double> v1_scores(std::size_t n, const std::string& model) {
    json::array records;
    for (std::size_t i = 0; i < n; ++i) records.emplace_back(json::parse(lines_[i]));
    auto r = call("POST", "/v1/predict",
                  json::serialize(json::object{{"platform", "x16"}, {"model", model}, {"records", std::move(records)}}),
                  reader_);
    EXPECT_EQ(r.status, 200) << r.body.substr(0, 500);
    std::vector<double> out;
    const json::value answer = r.json();  // kept alive: the loop reads into it
    if (r.status == 200) {
      for (const auto& s : answer.at("scores").as_array()) out.push_back(s.to_number<double>());
    }
    return out;
  }
};

std::vector<double> scores_of(const HttpResult& r) {
  std::vector<double> out;
  const json::value v = r.json();
  if (!v.is_object()) return out;
  for (const auto& s : v.at("outputs").at(0).at("data").as_array()) out.push_back(s.to_number<double>());
  return out;
}

void expect_same_scores(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << i;
    ASSERT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::fabs(want[i]))) << "program " << i;
  }
}

TEST_F(InferenceV2Test, HealthAndServerMetadata) {
  // Health is open and its answer is the status, with an empty body.
  auto live = http_get(tcld_->port(), "/v2/health/live");
  EXPECT_EQ(live.status, 200);
  EXPECT_TRUE(live.body.empty()) << live.body;
  auto ready = http_get(tcld_->port(), "/v2/health/ready");
  EXPECT_EQ(ready.status, 200);  // no version yet: nothing to load
  EXPECT_TRUE(ready.body.empty()) << ready.body;

  // Server metadata needs a read token, like /v1.
  EXPECT_EQ(http_get(tcld_->port(), "/v2").status, 401);
  auto meta = http_get(tcld_->port(), "/v2", reader_);
  ASSERT_EQ(meta.status, 200) << meta.body;
  EXPECT_EQ(meta.json().at("name").as_string(), "tcld");
  EXPECT_FALSE(meta.json().at("version").as_string().empty());
  EXPECT_TRUE(meta.json().at("extensions").is_array());

  // No version yet: the model is not found, in the protocol's error shape.
  auto none = http_get(tcld_->port(), "/v2/models/tcl", reader_);
  EXPECT_EQ(none.status, 404) << none.body;
  EXPECT_TRUE(none.json().at("error").is_string()) << none.body;

  // Not ready while the database is down; still live.
  PgCluster::shared().stop();
  EXPECT_EQ(http_get(tcld_->port(), "/v2/health/ready").status, 400);
  EXPECT_EQ(http_get(tcld_->port(), "/v2/health/live").status, 200);
  PgCluster::shared().start();
  int status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {
    status = http_get(tcld_->port(), "/v2/health/ready").status;
    if (status != 200) std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(status, 200);
}

TEST_F(InferenceV2Test, ModelMetadataAndReadiness) {
  const std::int64_t v1 = add_version(fresh_checkpoint(1, 72));
  const std::int64_t v2 = add_version(fresh_checkpoint(2, 40));  // a candidate; production stays on v1

  auto meta = http_get(tcld_->port(), "/v2/models/tcl", reader_);
  ASSERT_EQ(meta.status, 200) << meta.body;
  const json::value m = meta.json();
  EXPECT_EQ(m.at("name").as_string(), "tcl");
  EXPECT_EQ(json::serialize(m.at("versions")), "[\"" + std::to_string(v1) + "\",\"" + std::to_string(v2) + "\"]");
  EXPECT_EQ(m.at("platform").as_string(), "tcl_mamba");
  EXPECT_EQ(
      json::serialize(m.at("inputs")),
      R"([{"name":"tokens","datatype":"FP32","shape":[-1,-1,50]},{"name":"lengths","datatype":"INT64","shape":[-1]}])");
  EXPECT_EQ(json::serialize(m.at("outputs")), R"([{"name":"scores","datatype":"FP32","shape":[-1]}])");
  EXPECT_EQ(m.at("parameters").at("version").as_string(), std::to_string(v1));
  EXPECT_EQ(m.at("parameters").at("max_len").as_int64(), 72);
  EXPECT_EQ(m.at("parameters").at("token_dim").as_int64(), core::kTokenDim);

  auto meta2 = http_get(tcld_->port(), "/v2/models/tcl/versions/" + std::to_string(v2), reader_);
  ASSERT_EQ(meta2.status, 200) << meta2.body;
  EXPECT_EQ(meta2.json().at("parameters").at("version").as_string(), std::to_string(v2));
  EXPECT_EQ(meta2.json().at("parameters").at("max_len").as_int64(), 40);

  EXPECT_EQ(http_get(tcld_->port(), "/v2/models/tcl/ready", reader_).status, 200);
  auto ready2 = http_get(tcld_->port(), "/v2/models/tcl/versions/" + std::to_string(v2) + "/ready", reader_);
  EXPECT_EQ(ready2.status, 200);
  EXPECT_TRUE(ready2.body.empty()) << ready2.body;

  const auto expect_404 = [&](const std::string& target, const std::string& needle) {
    auto r = http_get(tcld_->port(), target, reader_);
    EXPECT_EQ(r.status, 404) << target << " -> " << r.body;
    ASSERT_TRUE(r.json().is_object()) << target << " -> " << r.body;
    ASSERT_TRUE(r.json().at("error").is_string()) << target << " -> " << r.body;
    EXPECT_NE(r.json().at("error").as_string().find(needle), std::string::npos) << target << " -> " << r.body;
  };
  expect_404("/v2/models/resnet", "resnet");
  expect_404("/v2/models/resnet/ready", "resnet");
  expect_404("/v2/models/tcl/versions/99", "99");
  expect_404("/v2/models/tcl/versions/99/ready", "99");
  expect_404("/v2/models/tcl/versions/production", "production");
  EXPECT_EQ(http_get(tcld_->port(), "/v2/models/tcl").status, 401);
}

TEST_F(InferenceV2Test, InferGivesTheScoresOfV1Predict) {
  const std::int64_t v1 = add_version(fresh_checkpoint(1, 72));
  const std::int64_t v2 = add_version(fresh_checkpoint(2, 16));  // shorter than many records
  const std::vector<double> want1 = v1_scores(lines_.size(), "production");
  const std::vector<double> want2 = v1_scores(lines_.size(), std::to_string(v2));

  // Flat data, INT64 lengths, an id echoed back.
  const Encoded e1 = encode(lines_, 72);
  json::object body = infer_body(e1);
  body["id"] = "req-42";
  auto r = infer(body);
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 500);
  const json::value a = r.json();
  EXPECT_EQ(a.at("model_name").as_string(), "tcl");
  EXPECT_EQ(a.at("model_version").as_string(), std::to_string(v1));
  EXPECT_EQ(a.at("id").as_string(), "req-42");
  EXPECT_EQ(a.at("parameters").at("platform").as_string(), "x16");
  EXPECT_TRUE(a.at("parameters").at("platform_covered").as_bool());
  const json::value& out = a.at("outputs").at(0);
  EXPECT_EQ(out.at("name").as_string(), "scores");
  EXPECT_EQ(out.at("datatype").as_string(), "FP32");
  EXPECT_EQ(json::serialize(out.at("shape")), "[" + std::to_string(lines_.size()) + "]");
  expect_same_scores(scores_of(r), want1);

  // A version by number, tokens cut to its max_len, nested data, INT32
  // lengths; padding past each length is ignored whatever it holds.
  Encoded e2 = encode(lines_, 16);
  for (std::int64_t i = 0; i < e2.n; ++i) {
    for (std::int64_t t = e2.lengths[i]; t < e2.L; ++t) {
      for (int d = 0; d < core::kTokenDim; ++d) e2.tokens[(i * e2.L + t) * core::kTokenDim + d] = 7.0f;
    }
  }
  json::object nested_body{
      {"parameters", json::object{{"platform", "x16"}}},
      {"inputs", json::array{tensor("tokens", "FP32", json::array{e2.n, e2.L, core::kTokenDim}, nested(e2)),
                             tensor("lengths", "INT32", json::array{e2.n}, flat(e2.lengths))}},
      {"outputs", json::array{json::object{{"name", "scores"}}}}};
  auto r2 = infer(nested_body, "/v2/models/tcl/versions/" + std::to_string(v2) + "/infer");
  ASSERT_EQ(r2.status, 200) << r2.body.substr(0, 500);
  EXPECT_EQ(r2.json().at("model_version").as_string(), std::to_string(v2));
  EXPECT_FALSE(r2.json().as_object().contains("id"));
  expect_same_scores(scores_of(r2), want2);

  // Without lengths every row is a step: right for a batch of equal lengths.
  std::size_t longest = 0;
  const Encoded all = encode(lines_, 72);
  for (std::size_t i = 0; i < lines_.size(); ++i) {
    if (all.lengths[i] == all.L) longest = i;
  }
  const Encoded one = encode({lines_[longest]}, 72);
  auto r3 = infer(infer_body(one, "x16", false));
  ASSERT_EQ(r3.status, 200) << r3.body;
  expect_same_scores(scores_of(r3), {want1[longest]});

  // An empty batch is an empty answer.
  Encoded empty;
  empty.L = 4;
  auto r4 = infer(infer_body(empty));
  ASSERT_EQ(r4.status, 200) << r4.body;
  EXPECT_EQ(json::serialize(r4.json().at("outputs").at(0).at("shape")), "[0]");

  auto metrics = http_get(tcld_->port(), "/metrics");
  EXPECT_NE(metrics.body.find("tcld_v2_infer_programs_total " + std::to_string(2 * lines_.size() + 1)),
            std::string::npos);
}

TEST_F(InferenceV2Test, DocumentedErrors) {
  // No version yet.
  const Encoded e = encode({lines_.begin(), lines_.begin() + 3}, 72);
  auto none = infer(infer_body(e));
  EXPECT_EQ(none.status, 404) << none.body;
  add_version(fresh_checkpoint(1, 72));

  const auto expect_error = [&](const std::string& body, int status, const std::string& needle,
                                const std::string& target = "/v2/models/tcl/infer") {
    auto r = call("POST", target, body, reader_);
    EXPECT_EQ(r.status, status) << body.substr(0, 300) << " -> " << r.body;
    const json::value v = r.json();
    ASSERT_TRUE(v.is_object() && v.as_object().contains("error") && v.at("error").is_string())
        << body.substr(0, 300) << " -> " << r.body;
    EXPECT_NE(v.at("error").as_string().find(needle), std::string::npos) << body.substr(0, 300) << " -> " << r.body;
  };
  const auto with = [&](const std::function<void(json::object&)>& edit) {
    json::object b = infer_body(e);
    edit(b);
    return json::serialize(b);
  };
  const auto input = [](json::object& b, std::size_t i) -> json::object& {
    return b["inputs"].as_array()[i].as_object();
  };
  const std::string good = json::serialize(infer_body(e));

  expect_error(good, 404, "resnet", "/v2/models/resnet/infer");
  expect_error(good, 404, "99", "/v2/models/tcl/versions/99/infer");
  expect_error(json::serialize(infer_body(e, "nope")), 404, "nope");
  expect_error(with([](json::object& b) { b.erase("parameters"); }), 400, "parameters.platform");
  expect_error(with([](json::object& b) {
                 b["parameters"] = json::object{{"platform_name", "x16"}};
               }),
               400, "parameters.platform");
  expect_error(with([](json::object& b) { b.erase("inputs"); }), 400, "'inputs'");
  expect_error(with([&](json::object& b) { b["inputs"].as_array().erase(b["inputs"].as_array().begin()); }), 400,
               "'tokens'");
  expect_error(with([&](json::object& b) { input(b, 0)["datatype"] = "FP64"; }), 400, "FP32");
  expect_error(with([&](json::object& b) {
                 input(b, 0)["shape"] = json::array{e.n, e.L * core::kTokenDim};
               }),
               400, "[n, L, D]");
  expect_error(with([&](json::object& b) { input(b, 0)["shape"] = json::array{e.n, e.L * 2, 25}; }), 400, "D = 25");
  expect_error(with([&](json::object& b) { input(b, 0)["shape"] = json::array{e.n, -1, 50}; }), 400, "non-negative");
  {
    const Encoded too_long = [&] {
      Encoded x = e;
      x.L = 73;
      x.tokens.assign(static_cast<std::size_t>(x.n * x.L * core::kTokenDim), 0.0f);
      return x;
    }();
    expect_error(json::serialize(infer_body(too_long)), 400, "L = 73");
  }
  expect_error(with([&](json::object& b) { input(b, 0)["data"].as_array().pop_back(); }), 400, "elements");
  expect_error(with([&](json::object& b) { input(b, 0)["data"].as_array()[5] = "x"; }), 400, "element 5 is not FP32");
  expect_error(with([&](json::object& b) {
                 json::array n = nested(e);
                 n[1].as_array().pop_back();
                 input(b, 0)["data"] = std::move(n);
               }),
               400, "depth 1");
  expect_error(with([&](json::object& b) { input(b, 1)["data"].as_array()[0] = e.L + 1; }), 400, "lengths[0]");
  expect_error(with([&](json::object& b) { input(b, 1)["data"].as_array()[0] = 1.5; }), 400, "is not INT64");
  expect_error(with([&](json::object& b) { input(b, 1)["shape"] = json::array{e.n + 1}; }), 400, "shape must be [n]");
  expect_error(with([&](json::object& b) { input(b, 1)["datatype"] = "FP32"; }), 400, "INT32 or INT64");
  expect_error(with([&](json::object& b) { input(b, 1)["name"] = "mask"; }), 400, "unknown input 'mask'");
  expect_error(with([&](json::object& b) { b["inputs"].as_array().push_back(b["inputs"].as_array()[0]); }), 400,
               "twice");
  expect_error(with([](json::object& b) {
                 b["outputs"] = json::array{json::object{{"name", "embedding"}}};
               }),
               400, "unknown output 'embedding'");

  // Bodies the API document itself rejects go to tcld directly: in contract mode
  // Prism would refuse them before tcld could answer (tests/lib/tcld_process.h).
  const auto expect_direct_error = [&](const std::string& body, const std::string& needle) {
    auto r =
        http_call(tcld_->tcld_port(),
                  HttpCall{"POST", "/v2/models/tcl/infer", body, reader_, {{"Content-Type", "application/json"}}, 60s});
    EXPECT_EQ(r.status, 400) << body.substr(0, 300) << " -> " << r.body;
    const json::value v = r.json();
    ASSERT_TRUE(v.is_object() && v.as_object().contains("error") && v.at("error").is_string()) << r.body;
    EXPECT_NE(v.at("error").as_string().find(needle), std::string::npos) << r.body;
  };
  expect_direct_error(good.substr(0, good.size() / 2), "JSON");
  expect_direct_error(with([](json::object& b) { b["id"] = 7; }), "id");

  // Infer needs a read token; tcld answers that before the protocol handler.
  EXPECT_EQ(call("POST", "/v2/models/tcl/infer", good, "").status, 401);
}

}  // namespace
}  // namespace tcl::testing
