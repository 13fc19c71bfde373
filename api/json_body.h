// api/json_body.h — reading JSON request bodies and their fields with errors
// that name the place: "body is not valid JSON at line 3, column 7",
// "field 'hardware_params' must be an array of 8 integers".
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tcl::api {

// What a body may hold before any of it is built in memory (issue 45 #8: a
// DOM costs 16+ bytes per value, so a 63 MiB array of zeros took ~1 GB).
struct JsonLimits {
  // Items in any one array, at any depth: a route's item limit (e.g.
  // predict's max_programs). Unlimited by default.
  std::size_t max_array_items = std::numeric_limits<std::size_t>::max();
};

// A JSON object body. The body is first scanned without building anything
// (a SAX pass that allocates nothing per value); only a body within `limits`
// is then parsed into a DOM. Errors:
//   kInvalidArgument  the line/column of a syntax error, "body must be a JSON
//                     object", or a string or key holding NUL (\u0000: stored
//                     text cannot hold it) — field() names where, e.g.
//                     "programs[3].workload_key".
//   kResourceExhausted (413) an array longer than limits.max_array_items;
//                     field() names the array.
Result<boost::json::object> parse_json_object(std::string_view body, const JsonLimits& limits = {});

// Field readers: kInvalidArgument naming the field (Status::invalid_field)
// when present with the wrong type, when required and missing, or when a
// string holds NUL (\u0000).
Result<std::string> required_string(const boost::json::object& o, std::string_view field);
Result<std::optional<std::string>> optional_string(const boost::json::object& o, std::string_view field);
Result<std::optional<std::int64_t>> optional_int(const boost::json::object& o, std::string_view field);
Result<std::optional<double>> optional_number(const boost::json::object& o, std::string_view field);

}  // namespace tcl::api
