#include "api/json_body.h"

#include <boost/json/parser.hpp>

namespace tcl::api {
namespace json = boost::json;

Result<json::object> parse_json_object(std::string_view body) {
  json::parser p;
  boost::system::error_code ec;
  // write() wants one complete value (trailing whitespace allowed) and
  // reports how far it got, which gives the error position.
  const std::size_t used = p.write(body.data(), body.size(), ec);
  if (ec) {
    const std::string_view consumed = body.substr(0, std::min(used, body.size()));
    std::size_t line = 1, col = 1;
    for (char c : consumed) {
      if (c == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    if (body.empty()) return Status::invalid_argument("body is empty; expected a JSON object");
    return Status::invalid_argument("body is not valid JSON at line " + std::to_string(line) + ", column " +
                                    std::to_string(col) + ": " + ec.message());
  }
  json::value v = p.release();
  if (!v.is_object()) return Status::invalid_argument("body must be a JSON object");
  return std::move(v.as_object());
}

namespace {
Status field_error(std::string_view field, std::string_view what) { return Status::invalid_field(field, what); }
}  // namespace

Result<std::string> required_string(const json::object& o, std::string_view field) {
  const json::value* v = o.if_contains(field);
  if (v == nullptr) return field_error(field, "is required");
  if (!v->is_string()) return field_error(field, "must be a string");
  return std::string(v->as_string());
}

Result<std::optional<std::string>> optional_string(const json::object& o, std::string_view field) {
  const json::value* v = o.if_contains(field);
  if (v == nullptr || v->is_null()) return std::optional<std::string>{};
  if (!v->is_string()) return field_error(field, "must be a string");
  return std::optional<std::string>(std::string(v->as_string()));
}

Result<std::optional<std::int64_t>> optional_int(const json::object& o, std::string_view field) {
  const json::value* v = o.if_contains(field);
  if (v == nullptr || v->is_null()) return std::optional<std::int64_t>{};
  if (v->is_int64()) return std::optional<std::int64_t>(v->as_int64());
  if (v->is_uint64() && v->as_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
    return std::optional<std::int64_t>(static_cast<std::int64_t>(v->as_uint64()));
  }
  return field_error(field, "must be an integer");
}

Result<std::optional<double>> optional_number(const json::object& o, std::string_view field) {
  const json::value* v = o.if_contains(field);
  if (v == nullptr || v->is_null()) return std::optional<double>{};
  if (!v->is_number()) return field_error(field, "must be a number");
  return std::optional<double>(v->to_number<double>());
}

}  // namespace tcl::api
