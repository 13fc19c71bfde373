#include "api/handlers/health.h"

#include <prometheus/text_serializer.h>

#include <boost/json.hpp>

#include "api/http_error.h"

namespace tcl::api {
namespace json = boost::json;

void add_health_routes(Router& router, HealthDeps deps) {
  auto shared = std::make_shared<HealthDeps>(std::move(deps));
  RouteOptions inline_open{Access::kOpen, std::size_t{0}};
  inline_open.lane = Lane::kInline;
  RouteOptions open = inline_open;
  open.lane = Lane::kProbe;
  RouteOptions scrape = inline_open;
  scrape.lane = Lane::kMetrics;

  router.add(
      http::verb::get, "/healthz",
      [](const Request&) {
        return json_response(http::status::ok, json::object{{"status", "ok"}});
      },
      inline_open);

  router.add(
      http::verb::get, "/readyz",
      [shared](const Request&) {
        json::object checks;
        bool ready = true;
        std::string causes;
        for (const ReadinessCheck& c : shared->readiness()) {
          json::object one{{"ok", c.ok}};
          if (!c.ok) one["message"] = c.message;
          if (!c.ok && !c.cause.empty()) causes += (causes.empty() ? "" : "; ") + c.name + ": " + c.cause;
          checks[c.name] = std::move(one);
          ready = ready && c.ok;
        }
        if (!ready) {
          Response r = error_response(http::status::service_unavailable, "NOT_READY", "tcld is not ready",
                                      json::object{{"checks", std::move(checks)}});
          r.log_cause = causes;
          r.headers["Retry-After"] = "1";
          return r;
        }
        return json_response(http::status::ok, json::object{{"status", "ready"}, {"checks", std::move(checks)}});
      },
      open);

  router.add(
      http::verb::get, "/metrics",
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
      scrape);

  router.add(
      http::verb::get, "/v1/openapi.yaml",
      [shared](const Request&) {
        Response res;
        res.content_type = "application/yaml";
        res.body = std::string(shared->openapi_yaml);
        return res;
      },
      inline_open);
}

}  // namespace tcl::api
