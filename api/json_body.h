// api/json_body.h — reading JSON request bodies and their fields with errors
// that name the place: "body is not valid JSON at line 3, column 7",
// "field 'hardware_params' must be an array of 8 integers".
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tcl::api {

// A JSON object body. kInvalidArgument with the line/column of a syntax
// error, or "body must be a JSON object".
Result<boost::json::object> parse_json_object(std::string_view body);

// Field readers: kInvalidArgument naming the field (Status::invalid_field)
// when present with the wrong type, or when required and missing.
Result<std::string> required_string(const boost::json::object& o, std::string_view field);
Result<std::optional<std::string>> optional_string(const boost::json::object& o, std::string_view field);
Result<std::optional<std::int64_t>> optional_int(const boost::json::object& o, std::string_view field);
Result<std::optional<double>> optional_number(const boost::json::object& o, std::string_view field);

}  // namespace tcl::api
