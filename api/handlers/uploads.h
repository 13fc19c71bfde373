// api/handlers/uploads.h — measurement and candidate uploads and downloads:
//   POST /v1/platforms/{name}/measurements   JSON lines in → upload report
//   POST /v1/platforms/{name}/candidates     JSON lines in → upload report
//     400: a bad Idempotency-Key, an empty body (Content-Length: 0 or chunked
//     alike; blank and comment lines do not count), corrupt gzip.
//     413: the body over max_upload_bytes, or gzip inflating past `inflate`.
//   GET  /v1/platforms/{name}/measurements   JSON lines out (streamed)
//   GET  /v1/platforms/{name}/candidates     JSON lines out (streamed)
// Metrics (registered in `metrics`):
//   tcld_uploads_total{kind,outcome}               outcome: stored | replayed | error
//   tcld_upload_lines_total{kind,result}           result: accepted | duplicate | rejected
//   tcld_upload_rejected_lines_total{kind,reason}  reason: api/ingest.h RejectReason names
//   tcld_upload_bytes_total{kind}                  body bytes of stored uploads, as received
// Does not own the stores or the registry; they must outlive the router.
#pragma once

#include <prometheus/registry.h>

#include <cstddef>
#include <string_view>

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

void add_upload_routes(Router& router, registry::PlatformStore& platforms, registry::UploadStore& uploads,
                       UploadRouteOptions options, prometheus::Registry& metrics);

}  // namespace tcl::api
