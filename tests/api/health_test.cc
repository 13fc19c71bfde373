// tests/api/health_test.cc — the health handlers (api/handlers/health.h)
// called directly: liveness, readiness (503 with the failing check's message,
// its cause only in the log), the metrics text and the API document.
#include "api/handlers/health.h"

#include <gtest/gtest.h>

#include <prometheus/counter.h>

#include <string>

#include "api/metrics.h"
#include "tests/api/handler_test_env.h"

namespace tcl::api {
namespace {

namespace json = boost::json;
using testing::body_json;
using testing::HandlerRequest;

TEST(HealthHandlersTest, LiveIsAlwaysOk) {
  HandlerRequest req;
  const Response r = handle_healthz(req);
  EXPECT_EQ(r.status, http::status::ok);
  EXPECT_EQ(body_json(r).at("status").as_string(), "ok");
}

TEST(HealthHandlersTest, ReadyNamesTheFailingCheckAndLogsItsCause) {
  bool database_up = true;
  HealthDeps deps;
  deps.readiness = [&] {
    return std::vector<ReadinessCheck>{{"migrations", true, "", ""},
                                       {"database", database_up, "the database is unreachable", "db:5432 refused"}};
  };
  HandlerRequest req;
  Response r = handle_readyz(req, deps);
  ASSERT_EQ(r.status, http::status::ok) << r.body;
  EXPECT_EQ(body_json(r).at("status").as_string(), "ready");
  EXPECT_TRUE(body_json(r).at("checks").at("database").at("ok").as_bool());

  database_up = false;
  r = handle_readyz(req, deps);
  EXPECT_EQ(r.status, http::status::service_unavailable);
  EXPECT_EQ(r.headers.at("Retry-After"), "1");
  const json::object details_body = body_json(r);
  const json::object& details = details_body.at("error").at("details").as_object();
  EXPECT_EQ(details.at("checks").at("database").at("message").as_string(), "the database is unreachable");
  EXPECT_TRUE(details.at("checks").at("migrations").at("ok").as_bool());
  EXPECT_EQ(r.body.find("5432"), std::string::npos);  // the cause is not for clients
  EXPECT_EQ(r.log_cause, "database: db:5432 refused");
}

TEST(HealthHandlersTest, MetricsSerializesEveryRegistryAfterTheHook) {
  prometheus::Registry a, b;
  prometheus::Counter& things = counter(a, "tcl_test_things_total", "Things.");
  gauge(b, "tcl_test_level", "A level.").Set(3);
  HealthDeps deps;
  deps.metric_registries = {&a, &b};
  deps.before_scrape = [&] { things.Increment(2); };
  HandlerRequest req;
  const Response r = handle_metrics(req, deps);
  EXPECT_EQ(r.status, http::status::ok);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(r.body.find("tcl_test_things_total 2"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("tcl_test_level 3"), std::string::npos) << r.body;
}

TEST(HealthHandlersTest, OpenApiIsTheDocumentAsYaml) {
  HealthDeps deps;
  deps.openapi_yaml = "openapi: 3.0.3\n";
  HandlerRequest req;
  const Response r = handle_openapi(req, deps);
  EXPECT_EQ(r.content_type, "application/yaml");
  EXPECT_EQ(r.body, "openapi: 3.0.3\n");
}

}  // namespace
}  // namespace tcl::api
