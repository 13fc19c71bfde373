// api/openapi.h — the OpenAPI 3 document (api/openapi.yaml), compiled in.
#pragma once

#include <string_view>

namespace tcl::api {
extern const std::string_view kOpenApiYaml;
}
