// tests/api/models_test.cc — the lineage and alias handlers
// (api/handlers/models.h) called directly, against a real PostgreSQL: the
// lineage, one version by number or alias, its weights with their checksum
// headers, and moving an alias (who and why recorded, bad names and bodies
// refused naming the field).
#include "api/handlers/models.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/sha256.h"
#include "registry/model_store.h"
#include "tests/api/handler_test_env.h"
#include "tests/lib/model_versions.h"

namespace tcl::api {
namespace {

namespace json = boost::json;
using testing::body_json;
using testing::error_code;
using testing::HandlerRequest;

class ModelHandlersTest : public testing::HandlerDbTest {
 protected:
  void SetUp() override {
    HandlerDbTest::SetUp();
    models_ = std::make_unique<registry::ModelStore>(*pool_);
  }
  std::int64_t add_version(const std::string& weights) {
    return tcl::testing::add_version(*models_, weights, {.metrics_json = R"({"x16": {"top1": 0.5}})"});
  }
  std::unique_ptr<registry::ModelStore> models_;
};

TEST_F(ModelHandlersTest, LineageListsEveryVersionOldestFirst) {
  const std::int64_t v1 = add_version("weights one"), v2 = add_version("weights two");
  HandlerRequest list;
  const Response r = handle_list_models(list, *models_);
  ASSERT_EQ(r.status, http::status::ok) << r.body;
  const json::object versions_body = body_json(r);
  const json::array& versions = versions_body.at("versions").as_array();
  ASSERT_EQ(versions.size(), 2u);
  EXPECT_EQ(versions[0].at("version").as_int64(), v1);
  EXPECT_EQ(versions[1].at("version").as_int64(), v2);
  EXPECT_EQ(versions[0].at("aliases").as_array().at(0).as_string(), "production");  // the first version
  EXPECT_TRUE(versions[1].at("aliases").as_array().empty());
  EXPECT_EQ(versions[0].at("metrics").at("x16").at("top1").as_double(), 0.5);  // stored JSON goes out as JSON
  EXPECT_EQ(versions[0].at("weights_size").as_int64(), 11);
}

TEST_F(ModelHandlersTest, TheSummaryViewKeepsStandingSplitsAndTheDistillsMethodOnly) {
  registry::NewVersion v;
  v.platforms = {"x16"};
  v.weights = "w";
  v.metrics_json = R"({"x16": {"top1": 0.5, "standing_split": {"top1": 0.4, "held_out": true}},
                      "versus_parent": {"x16": {"tasks": 3}}})";
  v.config_json = R"({"kind": "distill", "model": "mamba", "init": null, "epochs": 24,
                      "distill": {"method": "adapter", "adapter_rank": 4, "margin": 0.01}})";
  v.training_summary_json = R"({"job": 7, "epoch_losses": [1, 2]})";
  ASSERT_TRUE(models_->create_version(v));
  HandlerRequest list;
  list.get().query["view"] = "summary";
  const Response r = handle_list_models(list, *models_);
  ASSERT_EQ(r.status, http::status::ok) << r.body;
  const json::object body = body_json(r);
  const json::value& got = body.at("versions").as_array().at(0);
  EXPECT_EQ(json::serialize(got.at("metrics")), R"({"x16":{"standing_split":{"top1":4E-1,"held_out":true}}})");
  EXPECT_EQ(got.at("config").at("distill").at("method").as_string(), "adapter");
  EXPECT_EQ(got.at("config").at("distill").at("adapter_rank").as_int64(), 4);
  EXPECT_FALSE(got.at("config").as_object().contains("epochs"));
  EXPECT_TRUE(got.at("training_summary").as_object().empty());
  EXPECT_EQ(got.at("platforms").as_array().at(0).as_string(), "x16");

  HandlerRequest bad;
  bad.get().query["view"] = "tiny";
  const Response refused = handle_list_models(bad, *models_);
  EXPECT_EQ(refused.status, http::status::bad_request);
  EXPECT_EQ(body_json(refused).at("error").at("details").at("field").as_string(), "view");
}

// ?fields=: only the keys asked for (and version), in either view; trained_on in the summary only;
// an unknown key a 400 naming "fields".
TEST_F(ModelHandlersTest, FieldsPicksTheKeysOfEachVersion) {
  registry::NewVersion v;
  v.platforms = {"x16"};
  v.weights = "w";
  v.metrics_json = R"({"x16": {"standing_split": {"top1": 0.123456, "held_out": true}}})";
  ASSERT_TRUE(models_->create_version(v));
  const auto list = [&](const std::string& view, const std::string& fields) {
    HandlerRequest req;
    if (!view.empty()) req.get().query["view"] = view;
    req.get().query["fields"] = fields;
    return handle_list_models(req, *models_);
  };
  const Response r = list("summary", "platforms,trained_on,metrics");
  ASSERT_EQ(r.status, http::status::ok) << r.body;
  const json::object body = body_json(r);
  const json::object& got = body.at("versions").as_array().at(0).as_object();
  EXPECT_EQ(got.size(), 4u) << json::serialize(got);
  EXPECT_EQ(got.at("trained_on").as_string(), "x16");
  EXPECT_EQ(got.at("platforms").as_array().at(0).as_string(), "x16");
  EXPECT_EQ(got.at("metrics").at("x16").at("standing_split").at("top1").as_double(), 0.1235);  // rounded
  EXPECT_TRUE(got.contains("version"));

  const Response full = list("", "version,serving,status");
  ASSERT_EQ(full.status, http::status::ok) << full.body;
  const json::object full_body = body_json(full);
  const json::object& one = full_body.at("versions").as_array().at(0).as_object();
  EXPECT_EQ(one.size(), 3u) << json::serialize(one);
  EXPECT_EQ(one.at("serving").at("x16").at("model").as_string(), "student");

  // ?metrics_for=: the figures of those platforms only (the summary's).
  HandlerRequest only;
  only.get().query = {{"view", "summary"}, {"fields", "metrics"}, {"metrics_for", "t4,x16"}};
  const Response some = handle_list_models(only, *models_);
  ASSERT_EQ(some.status, http::status::ok) << some.body;
  EXPECT_TRUE(body_json(some).at("versions").at(0).at("metrics").as_object().contains("x16")) << some.body;
  only.get().query["metrics_for"] = "t4";
  EXPECT_TRUE(body_json(handle_list_models(only, *models_)).at("versions").at(0).at("metrics").as_object().empty());
  for (const std::string& bad : {std::string("t4,"), std::string("T4"), std::string("")}) {
    only.get().query["metrics_for"] = bad;
    const Response refused = handle_list_models(only, *models_);
    EXPECT_EQ(refused.status, http::status::bad_request) << bad << ": " << refused.body;
    EXPECT_EQ(body_json(refused).at("error").at("details").at("field").as_string(), "metrics_for") << bad;
  }
  only.get().query = {{"metrics_for", "x16"}};  // the full view has no such choice
  EXPECT_EQ(handle_list_models(only, *models_).status, http::status::bad_request);

  for (const std::string& bad :
       {std::string("version,colour"), std::string(""), std::string("version,"), std::string("trained_on")}) {
    const Response refused = list(bad == "trained_on" ? "full" : "summary", bad);
    EXPECT_EQ(refused.status, http::status::bad_request) << bad << ": " << refused.body;
    EXPECT_EQ(body_json(refused).at("error").at("details").at("field").as_string(), "fields") << bad;
  }
}

TEST_F(ModelHandlersTest, OneVersionByNumberOrAliasAndItsWeights) {
  const std::int64_t v1 = add_version("the weights");
  HandlerRequest by_alias({}, {{"version", "production"}});
  const Response r = handle_get_model(by_alias, *models_);
  ASSERT_EQ(r.status, http::status::ok) << r.body;
  EXPECT_EQ(body_json(r).at("version").as_int64(), v1);

  HandlerRequest weights({}, {{"version", std::to_string(v1)}});
  const Response w = handle_get_model_weights(weights, *models_);
  ASSERT_EQ(w.status, http::status::ok) << w.body;
  EXPECT_EQ(w.body, "the weights");
  EXPECT_EQ(w.content_type, "application/octet-stream");
  const std::string sha = sha256_hex("the weights");
  EXPECT_EQ(w.headers.at("ETag"), "\"" + sha + "\"");
  EXPECT_EQ(w.headers.at("X-Weights-SHA256"), sha);
  EXPECT_EQ(w.headers.at("Content-Disposition"), "attachment; filename=\"tcl-v" + std::to_string(v1) + ".pt\"");

  HandlerRequest unknown({}, {{"version", "99"}});
  EXPECT_EQ(handle_get_model(unknown, *models_).status, http::status::not_found);
  EXPECT_EQ(handle_get_model_weights(unknown, *models_).status, http::status::not_found);
}

// "serving": per platform, which model serves it and why — a best-of
// version's as its job wrote it, an adapter version's and a train job's
// from their kind.
TEST_F(ModelHandlersTest, SaysPerPlatformWhichModelServesItAndWhy) {
  const std::int64_t v1 = add_version("trained");
  registry::NewPlatform t4;
  t4.name = "t4";
  t4.target = "cuda -keys=cuda,gpu -arch=sm_75";
  t4.hardware_params = {-1, 16, 64, 49152, 2147483647, 1024, 8, 32};
  ASSERT_TRUE(platforms_->create(t4));
  const auto add = [&](const std::string& config, std::vector<std::string> platforms) {
    registry::NewVersion v;
    v.parent = v1;
    v.platforms = std::move(platforms);
    v.weights = "w" + config;
    v.config_json = config;
    auto created = models_->create_version(v, registry::CreateVersionOptions{});
    EXPECT_TRUE(created) << created.status().to_string();
    return created ? created->version : 0;
  };
  const auto serving = [&](std::int64_t v) {
    HandlerRequest get({}, {{"version", std::to_string(v)}});
    const Response r = handle_get_model(get, *models_);
    EXPECT_EQ(r.status, http::status::ok) << r.body;
    return body_json(r).at("serving").as_object();
  };
  EXPECT_EQ(serving(v1).at("x16").at("model").as_string(), "student");
  const std::int64_t adapter = add(R"({"kind": "distill", "distill": {"method": "adapter"}})", {"x16", "t4"});
  const json::object a = serving(adapter);
  EXPECT_EQ(a.at("t4").at("model").as_string(), "adapter");
  EXPECT_EQ(a.at("x16").at("from_version").as_int64(), v1);
  const std::int64_t best = add(
      R"j({"kind": "distill", "distill": {"method": "best-of"}, "serving": {"x16": {"model": "pinned",
          "origin": "the parent's model, the trunk", "from_version": 1, "reason": "old"}, "t4": {"model": "pinned",
          "origin": "fine-tune", "reason": "best", "validation": [{"candidate": "student", "top1": 0.6},
          {"candidate": "fine-tune", "top1": 0.7}]}}})j",
      {"x16", "t4"});
  const json::object b = serving(best);
  EXPECT_EQ(b.at("t4").at("origin").as_string(), "fine-tune");
  EXPECT_EQ(b.at("t4").at("validation").as_array().size(), 2u);
  EXPECT_EQ(b.at("x16").at("model").as_string(), "pinned");
}

TEST_F(ModelHandlersTest, PutAliasRecordsWhoAndWhy) {
  const std::int64_t v1 = add_version("one"), v2 = add_version("two");
  HandlerRequest put(R"({"version": )" + std::to_string(v2) + "}", {{"alias", "staging"}});
  put.principal("ops");
  const Response r = handle_put_alias(put, *models_);
  ASSERT_EQ(r.status, http::status::ok) << r.body;
  const json::object o = body_json(r);
  EXPECT_EQ(o.at("version").as_int64(), v2);
  EXPECT_TRUE(o.at("changed").as_bool());
  EXPECT_EQ(o.at("move").at("actor").as_string(), "ops");
  EXPECT_EQ(o.at("move").at("reason").as_string(), "moved by hand");
  EXPECT_TRUE(o.at("move").at("from_version").is_null());

  HandlerRequest back(R"({"version": )" + std::to_string(v1) + R"(, "reason": "rollback"})", {{"alias", "staging"}});
  ASSERT_EQ(handle_put_alias(back, *models_).status, http::status::ok);  // no principal: "unknown"
  HandlerRequest history({}, {{"alias", "staging"}});
  const Response h = handle_alias_history(history, *models_);
  ASSERT_EQ(h.status, http::status::ok) << h.body;
  const json::object moves_body = body_json(h);
  const json::array& moves = moves_body.at("history").as_array();
  ASSERT_EQ(moves.size(), 2u);
  EXPECT_EQ(moves[1].at("from_version").as_int64(), v2);
  EXPECT_EQ(moves[1].at("actor").as_string(), "unknown");
  EXPECT_EQ(moves[1].at("reason").as_string(), "rollback");

  HandlerRequest get({}, {{"alias", "staging"}});
  EXPECT_EQ(body_json(handle_get_alias(get, *models_)).at("version").as_int64(), v1);
}

TEST_F(ModelHandlersTest, PutAliasRefusesBadNamesAndBodiesNamingTheField) {
  add_version("one");
  HandlerRequest digits(R"({"version": 1})", {{"alias", "7up"}});  // would read as a version number
  Response r = handle_put_alias(digits, *models_);
  EXPECT_EQ(r.status, http::status::bad_request);
  EXPECT_EQ(body_json(r).at("error").at("details").at("field").as_string(), "alias");

  HandlerRequest no_version(R"({"reason": "x"})", {{"alias", "staging"}});
  r = handle_put_alias(no_version, *models_);
  EXPECT_EQ(r.status, http::status::bad_request);
  EXPECT_EQ(body_json(r).at("error").at("details").at("field").as_string(), "version");

  HandlerRequest unknown_version(R"({"version": 42})", {{"alias", "staging"}});
  EXPECT_EQ(handle_put_alias(unknown_version, *models_).status, http::status::not_found);
  HandlerRequest no_alias({}, {{"alias", "staging"}});
  EXPECT_EQ(error_code(handle_get_alias(no_alias, *models_)), "NOT_FOUND");
}

}  // namespace
}  // namespace tcl::api
