// api/handlers/predict.h — POST /v1/predict (DESIGN §8): scores for a batch
// of programs on one platform, from an in-memory model version.
//
// Body: {"platform": name, "model": alias or version (default "production"),
//        "records": [record, ...]}            TVM records, as JSON objects or lines
//    or {"platform", "model", "programs": [{"workload_key", "steps"}, ...]}
// Answer: {"model_version", "platform", "platform_covered", "scores": [...],
//          "truncated"}: one finite score per program in request order,
//          higher = faster; platform_covered says whether the version was
//          trained on that platform (otherwise the scores are its zero-shot
//          guess from the hardware descriptor); truncated counts programs
//          with more steps than the model reads (their first max_len steps
//          were scored).
// Errors: 400 for a malformed body or program (details name the index and
// the reason), 404 for an unknown platform, alias or version, 413 for more
// programs than `max_programs`.
//
// Scoring is api/scoring.h's. The platform's hardware descriptor is cached
// by name (platforms do not change once created). Metrics: PredictMetrics
// (api/http_metrics.h). Thread-safe; does not own what it is given, which
// must outlive the router.
#pragma once

#include <prometheus/registry.h>

#include <cstddef>

#include "api/descriptor_cache.h"
#include "api/http_metrics.h"
#include "api/model_cache.h"
#include "api/router.h"
#include "registry/platform_store.h"

namespace tcl::api {

struct PredictRouteOptions {
  std::size_t max_programs = 65'536;   // per request
  std::size_t body_limit = 64u << 20;  // bytes (a CPU record is ~1 KB)
};

// What handle_predict uses; none owned.
struct PredictServices {
  DescriptorCache& descriptors;
  ModelCache& models;
  PredictMetrics& metrics;  // counts the programs of every answered request
  PredictRouteOptions options;
};

// POST /v1/predict: the answer above, or the error.
Response handle_predict(const Request& req, PredictServices& svc);

void add_predict_routes(Router& router, registry::PlatformStore& platforms, ModelCache& models,
                        prometheus::Registry& metrics, PredictRouteOptions options = {});

}  // namespace tcl::api
