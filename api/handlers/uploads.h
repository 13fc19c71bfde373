// api/handlers/uploads.h — measurement and candidate uploads and downloads:
//   POST /v1/platforms/{name}/measurements   JSON lines in → upload report
//   POST /v1/platforms/{name}/candidates     JSON lines in → upload report
//   GET  /v1/platforms/{name}/measurements   JSON lines out (streamed)
//   GET  /v1/platforms/{name}/candidates     JSON lines out (streamed)
// Does not own the stores; they must outlive the router.
#pragma once

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
                       UploadRouteOptions options);

}  // namespace tcl::api
