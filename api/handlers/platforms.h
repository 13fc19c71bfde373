// api/handlers/platforms.h — the platforms, and the one platform lookup every
// route under /v1/platforms/{name} uses:
//   POST /v1/platforms          (write) {"name", "target", "hardware_params": [8 ints], "description"?}
//                               → 201 + Location; 400 naming the field; 409 for a taken name
//   GET  /v1/platforms          every platform, without counts; ?with=counts: each with its counts
//                               and onboarding state, as GET /v1/platforms/{name} (400 naming "with")
//   GET  /v1/platforms/{name}   one platform with its counts and onboarding state; 404 unknown
// Handlers return the answer; errors go through api/http_error.h.
// Does not own the store; it must outlive the router.
#pragma once

#include <string>
#include <string_view>

#include "api/http_types.h"
#include "api/router.h"
#include "core/status.h"
#include "registry/platform_store.h"

namespace tcl::api {

// Platform names: [a-z0-9][a-z0-9._-]{0,63}.
bool valid_platform_name(std::string_view name);

// The platform lookup of the routes under /v1/platforms/{name}. OK or
// kNotFound "platform '<name>' does not exist" for a name that is not
// valid_platform_name (answered without a query: such a platform cannot
// exist). A route that reads its body before it asks the store calls it
// first, so that an unknown platform is 404 whatever the body.
Status check_platform_name(const std::string& name);
// check_platform_name, then the store: PlatformStore::find (no counts) or
// get (with counts). kNotFound in the same words for an unknown platform.
Result<registry::PlatformRow> find_platform(registry::PlatformStore& platforms, const std::string& name);
Result<registry::PlatformRow> get_platform(registry::PlatformStore& platforms, const std::string& name);

Response handle_create_platform(const Request& req, registry::PlatformStore& platforms);
Response handle_list_platforms(const Request& req, registry::PlatformStore& platforms);
// Path parameter "name".
Response handle_get_platform(const Request& req, registry::PlatformStore& platforms);

void add_platform_routes(Router& router, registry::PlatformStore& platforms);

}  // namespace tcl::api
