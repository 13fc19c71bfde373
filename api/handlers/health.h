// api/handlers/health.h — GET /healthz, /readyz, /metrics, /v1/openapi.yaml.
// All open (no token). /healthz and the document run on the I/O thread
// (Lane::kInline), /readyz on the probe pool (Lane::kProbe), /metrics on a
// pool of its own (Lane::kMetrics): none of them queues behind handlers, and
// readiness never queues behind a scrape flood. Does not own anything it is given; all of it must
// outlive the router.
#pragma once

#include <prometheus/registry.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "api/router.h"

namespace tcl::api {

struct ReadinessCheck {
  std::string name;  // "database", "migrations", "draining", "model"
  bool ok = false;
  std::string message;  // why not, when !ok: our own words (the probe is public)
  std::string cause;    // the underlying error, for the log line only
};

struct HealthDeps {
  // Runs every readiness check; ready when all pass.
  std::function<std::vector<ReadinessCheck>()> readiness;
  // The registries /metrics serializes, and a hook that refreshes gauges
  // that are sampled at scrape time. It must be cheap and must not ask the
  // database (a scrape is open to anyone): SQL-backed gauges are refreshed
  // on a timer instead (daemon/gauge_refresher.h).
  std::vector<const prometheus::Registry*> metric_registries;
  std::function<void()> before_scrape;
  std::string_view openapi_yaml;
};

// GET /healthz: 200 {"status": "ok"}, always.
Response handle_healthz(const Request& req);
// GET /readyz: 200 {"status": "ready", "checks": {name: {"ok"}}} when every
// check passes, else 503 NOT_READY with the checks (their messages, never
// their causes: those go to the log line) and Retry-After: 1.
Response handle_readyz(const Request& req, const HealthDeps& deps);
// GET /metrics: every registry in the Prometheus text format (0.0.4).
Response handle_metrics(const Request& req, const HealthDeps& deps);
// GET /v1/openapi.yaml: the API document.
Response handle_openapi(const Request& req, const HealthDeps& deps);

void add_health_routes(Router& router, HealthDeps deps);

}  // namespace tcl::api
