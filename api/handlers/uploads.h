// api/handlers/uploads.h — measurement and candidate uploads and downloads:
//   POST /v1/platforms/{name}/measurements   JSON lines in → upload report
//   POST /v1/platforms/{name}/candidates     JSON lines in → upload report
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

#include "api/router.h"
#include "registry/platform_store.h"
#include "registry/upload_store.h"

namespace tcl::api {

struct UploadRouteOptions {
  std::size_t max_upload_bytes = 1ull << 30;  // body limit of the POST routes (413 above)
  std::size_t max_line_bytes = 1 << 20;
};

void add_upload_routes(Router& router, registry::PlatformStore& platforms, registry::UploadStore& uploads,
                       UploadRouteOptions options, prometheus::Registry& metrics);

}  // namespace tcl::api
