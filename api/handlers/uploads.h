// api/handlers/uploads.h — measurement and candidate uploads and downloads:
//   POST /v1/platforms/{name}/measurements   JSON lines in → upload report
//   POST /v1/platforms/{name}/candidates     JSON lines in → upload report
//     400: a bad Idempotency-Key, an empty body (Content-Length: 0 or chunked
//     alike; blank and comment lines do not count), corrupt gzip.
//     413: the body over max_upload_bytes, or gzip inflating past `inflate`.
//   GET  /v1/platforms/{name}/measurements   JSON lines out (streamed)
//   GET  /v1/platforms/{name}/candidates     JSON lines out (streamed)
// Metrics (api/http_metrics.h UploadKindMetrics, registered in `metrics`):
//   tcld_uploads_total{kind,outcome}               outcome: stored | replayed | error
//   tcld_upload_lines_total{kind,result}           result: accepted | duplicate | rejected
//   tcld_upload_rejected_lines_total{kind,reason}  reason: core/ingest_rules.h RejectReason names
//   tcld_upload_bytes_total{kind}                  body bytes of stored uploads, as received
// Does not own the stores or the registry; they must outlive the router.
#pragma once

#include <prometheus/registry.h>

#include <cstddef>
#include <string_view>

#include "api/http_metrics.h"
#include "api/router.h"
#include "core/byte_stream.h"
#include "core/status.h"
#include "registry/platform_store.h"
#include "registry/upload_store.h"

namespace tcl::api {

struct UploadRouteOptions {
  std::size_t max_upload_bytes = 1ull << 30;  // body limit of the POST routes (413 above)
  std::size_t max_line_bytes = 1 << 20;
  core::InflateLimits inflate;  // a gzip body inflating past these: 413
};

// Checks a request's Idempotency-Key value (empty = none): at most 255
// visible ASCII characters (0x21-0x7E). kInvalidArgument naming the header
// and the first bad byte otherwise.
Status check_idempotency_key(std::string_view key);

// POST: path parameter "name", headers Idempotency-Key and Content-Encoding,
// the body in req.body_stream (the server gives every stream_body route one;
// null is a 500). 201 + the report for a stored upload, 200 + the first
// report with Idempotent-Replayed: true for a replay; `metrics` counts it.
Response handle_upload(const Request& req, registry::PlatformStore& platforms, registry::UploadStore& uploads,
                       registry::UploadKind kind, const UploadRouteOptions& limits, UploadKindMetrics& metrics);
// GET: path parameter "name". 200 whose Response::stream writes the stored
// lines (application/x-ndjson) in 64 KiB chunks; 404 for an unknown platform.
Response handle_download(const Request& req, registry::PlatformStore& platforms, registry::UploadStore& uploads,
                         registry::UploadKind kind);

void add_upload_routes(Router& router, registry::PlatformStore& platforms, registry::UploadStore& uploads,
                       UploadRouteOptions options, prometheus::Registry& metrics);

}  // namespace tcl::api
