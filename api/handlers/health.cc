#include "api/handlers/health.h"

#include <prometheus/text_serializer.h>

#include <boost/json.hpp>

#include "api/http_error.h"

namespace tcl::api {
namespace json = boost::json;

Response handle_healthz(const Request&) { return json_response(http::status::ok, json::object{{"status", "ok"}}); }

Response handle_readyz(const Request&, const HealthDeps& deps) {
  json::object checks;
  bool ready = true;
  std::string causes;
  for (const ReadinessCheck& c : deps.readiness()) {
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
}

Response handle_metrics(const Request&, const HealthDeps& deps) {
  if (deps.before_scrape) deps.before_scrape();
  std::vector<prometheus::MetricFamily> families;
  for (const prometheus::Registry* r : deps.metric_registries) {
    auto f = r->Collect();
    families.insert(families.end(), std::make_move_iterator(f.begin()), std::make_move_iterator(f.end()));
  }
  Response res;
  res.content_type = "text/plain; version=0.0.4; charset=utf-8";
  res.body = prometheus::TextSerializer().Serialize(families);
  return res;
}

Response handle_openapi(const Request&, const HealthDeps& deps) {
  Response res;
  res.content_type = "application/yaml";
  res.body = std::string(deps.openapi_yaml);
  return res;
}

void add_health_routes(Router& router, HealthDeps deps) {
  auto shared = std::make_shared<const HealthDeps>(std::move(deps));
  RouteOptions inline_open{Access::kOpen, std::size_t{0}};
  inline_open.lane = Lane::kInline;
  RouteOptions open = inline_open;
  open.lane = Lane::kProbe;
  RouteOptions scrape = inline_open;
  scrape.lane = Lane::kMetrics;
  const auto route = [shared](Response (*handle)(const Request&, const HealthDeps&)) {
    return [shared, handle](const Request& req) { return handle(req, *shared); };
  };
  router.add(http::verb::get, "/healthz", handle_healthz, inline_open);
  router.add(http::verb::get, "/readyz", route(handle_readyz), open);
  router.add(http::verb::get, "/metrics", route(handle_metrics), scrape);
  router.add(http::verb::get, "/v1/openapi.yaml", route(handle_openapi), inline_open);
}

}  // namespace tcl::api
