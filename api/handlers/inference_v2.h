// api/handlers/inference_v2.h — the Open Inference Protocol (KServe v2) REST
// routes, for clients that featurize programs themselves:
//   GET  /v2                                   server metadata {"name", "version", "extensions"}
//   GET  /v2/health/live                       200, empty body (open, like /healthz)
//   GET  /v2/health/ready                      200 when /readyz's checks pass, else 400; empty body (open)
//   GET  /v2/models/{name}[/versions/{v}]      model metadata: versions, inputs, outputs
//   GET  /v2/models/{name}[/versions/{v}]/ready 200 when that version loads, else 400; empty body
//   POST /v2/models/{name}[/versions/{v}]/infer  tokens in, scores out
//
// tcld keeps one lineage, served under one model name (options.model_name,
// "tcl"); any other name is 404. {v} is a version number; without it the
// `production` alias decides. The metadata's "platform" is the protocol's
// framework name ("tcl_mamba"); the hardware platform an inference is for
// is the request parameter "platform".
//
// Infer request: {"id"?, "parameters": {"platform": registered platform name},
//   "inputs": [{"name": "tokens", "datatype": "FP32", "shape": [n, L, D], "data": [...]},
//              {"name": "lengths", "datatype": "INT32"|"INT64", "shape": [n], "data": [...]}?],
//   "outputs"?: [{"name": "scores"}]}
// "data" is row-major, flat or nested as the shape. Tokens are core's step
// tokens (core/features.h: D = the version's token_dim, kTokenDim; 1 ≤ L ≤
// its max_len), program i's real steps in rows [0, lengths[i]). Rows past
// lengths[i] are padding: they are ignored, whatever they hold. Without
// "lengths" every row is a step (lengths = L), so a client that pads must
// send lengths; then the scores equal /v1/predict's for the same programs.
// Answer: {"model_name", "model_version", "id"? (echoed), "parameters":
//   {"platform", "platform_covered"}, "outputs": [{"name": "scores",
//   "datatype": "FP32", "shape": [n], "data": [...]}]}, higher = faster.
//
// Errors are the protocol's {"error": "<message>"}: 400 for a malformed
// request (the message names the input and what is wrong), 404 for an
// unknown model, version or platform, 409 for a version that reads another
// hardware descriptor layout, 413 for more than max_programs programs. Failures decided before
// a handler runs (401/403 without a good token, 404 for an unknown path,
// 405, a body over the limit) keep tcld's {"error": {"code", ...}} shape.
//
// Access: the health routes are open; everything else needs a read token,
// like /v1/predict. Metrics: InferMetrics (api/http_metrics.h),
// tcld_v2_infer_programs_total and tcld_v2_infer_model_seconds_total.
// Scoring is api/scoring.h's, as /v1/predict's.
//
// Thread-safe; does not own what it is given, which must outlive the router.
#pragma once

#include <prometheus/registry.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "api/descriptor_cache.h"
#include "api/handlers/health.h"
#include "api/http_metrics.h"
#include "api/model_cache.h"
#include "api/router.h"
#include "registry/model_store.h"
#include "registry/platform_store.h"

namespace tcl::api {

// The name the lineage is served under (GET /v2/models/tcl).
inline constexpr std::string_view kV2ModelName = "tcl";

struct InferenceV2Options {
  // The checks behind /v2/health/ready (the same as /readyz's); null: ready.
  std::function<std::vector<ReadinessCheck>()> readiness;
  std::string model_name = std::string(kV2ModelName);
  std::size_t max_programs = 65'536;  // n per infer request (413 above)
  // Bytes, as /v1/predict. Tokens travel as JSON text (~4-10 bytes a
  // float, most are 0): 64 MB holds a few thousand programs of 72 steps.
  std::size_t body_limit = 64u << 20;
};

// What the model routes use; none owned.
struct InferenceV2Services {
  registry::ModelStore& store;  // the lineage, for the metadata's "versions"
  ModelCache& models;
  DescriptorCache& descriptors;
  InferMetrics& metrics;  // counts the programs of every answered infer
  const InferenceV2Options& options;
};

// One route each, as listed above. Path parameters "name" and, for the
// routes under /versions/{version}, "version".
Response handle_v2_live(const Request& req);
Response handle_v2_ready(const Request& req, const InferenceV2Options& options);
Response handle_v2_server_metadata(const Request& req);
Response handle_v2_model_metadata(const Request& req, InferenceV2Services& svc);
Response handle_v2_model_ready(const Request& req, InferenceV2Services& svc);
Response handle_v2_infer(const Request& req, InferenceV2Services& svc);

void add_inference_v2_routes(Router& router, registry::PlatformStore& platforms, registry::ModelStore& store,
                             ModelCache& models, prometheus::Registry& metrics, InferenceV2Options options = {});

}  // namespace tcl::api
