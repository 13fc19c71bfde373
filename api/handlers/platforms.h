// api/handlers/platforms.h — POST/GET /v1/platforms, GET /v1/platforms/{name}.
// Does not own the store; it must outlive the router.
#pragma once

#include "api/router.h"
#include "registry/platform_store.h"

namespace tcl::api {

void add_platform_routes(Router& router, registry::PlatformStore& platforms);

// Platform names: [a-z0-9][a-z0-9._-]{0,63}.
bool valid_platform_name(std::string_view name);

}  // namespace tcl::api
