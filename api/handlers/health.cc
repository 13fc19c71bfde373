#include "api/handlers/health.h"

#include <prometheus/text_serializer.h>

#include <boost/json.hpp>

#include "api/http_error.h"

namespace tcl::api {
namespace json = boost::json;

void add_health_routes(Router& router, HealthDeps deps) {
  auto shared = std::make_shared<HealthDeps>(std::move(deps));
  const RouteOptions open{Access::kOpen, std::size_t{0}};

  router.add(http::verb::get, "/healthz",
             [](const Request&) { return json_response(http::status::ok, json::object{{"status", "ok"}}); }, open);

  router.add(http::verb::get, "/readyz",
             [shared](const Request&) {
               json::object checks;
               bool ready = true;
               for (const ReadinessCheck& c : shared->readiness()) {
                 json::object one{{"ok", c.ok}};
                 if (!c.ok) one["message"] = c.message;
                 checks[c.name] = std::move(one);
                 ready = ready && c.ok;
               }
               if (!ready) {
                 return error_response(http::status::service_unavailable, "NOT_READY", "tcld is not ready",
                                       json::object{{"checks", std::move(checks)}});
               }
               return json_response(http::status::ok, json::object{{"status", "ready"}, {"checks", std::move(checks)}});
             },
             open);

  router.add(http::verb::get, "/metrics",
             [shared](const Request&) {
               if (shared->before_scrape) shared->before_scrape();
               std::vector<prometheus::MetricFamily> families;
               for (const prometheus::Registry* r : shared->metric_registries) {
                 auto f = r->Collect();
                 families.insert(families.end(), std::make_move_iterator(f.begin()), std::make_move_iterator(f.end()));
               }
               Response res;
               res.content_type = "text/plain; version=0.0.4; charset=utf-8";
               res.body = prometheus::TextSerializer().Serialize(families);
               return res;
             },
             open);

  router.add(http::verb::get, "/v1/openapi.yaml",
             [shared](const Request&) {
               Response res;
               res.content_type = "application/yaml";
               res.body = std::string(shared->openapi_yaml);
               return res;
             },
             open);
}

}  // namespace tcl::api
