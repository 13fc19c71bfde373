#include "api/handlers/ui.h"

#include <string>

#include "api/http_error.h"

namespace tcl::api {
namespace {

// The headers every /ui answer carries, 404 included.
void set_ui_headers(Response& res) {
  res.headers["Content-Security-Policy"] = std::string(kUiContentSecurityPolicy);
  res.headers["X-Content-Type-Options"] = "nosniff";
  res.headers["Referrer-Policy"] = "no-referrer";
  res.headers["X-Frame-Options"] = "DENY";
}

// Whether an If-None-Match header names `etag` (a list, or *).
bool etag_matches(std::string_view if_none_match, std::string_view etag) {
  if (if_none_match.empty()) return false;
  if (if_none_match == "*") return true;
  std::size_t at = 0;
  while (at < if_none_match.size()) {
    std::size_t end = if_none_match.find(',', at);
    if (end == std::string_view::npos) end = if_none_match.size();
    std::string_view tag = if_none_match.substr(at, end - at);
    while (!tag.empty() && tag.front() == ' ') tag.remove_prefix(1);
    while (!tag.empty() && tag.back() == ' ') tag.remove_suffix(1);
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (tag == etag) return true;
    at = end + 1;
  }
  return false;
}

}  // namespace

Response handle_ui_file(const Request& req, std::span<const UiAsset> assets) {
  const auto param = req.path_params.find("file");
  const std::string_view name = param == req.path_params.end() ? std::string_view("index.html") : param->second;
  for (const UiAsset& a : assets) {
    if (a.name != name) continue;
    Response res;
    set_ui_headers(res);
    res.headers["ETag"] = std::string(a.etag);
    res.headers["Cache-Control"] = "no-cache";
    if (etag_matches(req.header("If-None-Match"), a.etag)) {
      res.status = http::status::not_modified;
      res.content_type = std::string(a.content_type);
      return res;
    }
    res.content_type = std::string(a.content_type);
    res.body = std::string(a.bytes);
    return res;
  }
  Response res = error_response(Status::not_found("the console has no file '" + std::string(name) + "'"));
  set_ui_headers(res);
  return res;
}

void add_ui_routes(Router& router, std::span<const UiAsset> assets) {
  RouteOptions options{Access::kOpen, std::size_t{0}};
  options.lane = Lane::kInline;
  const auto handle = [assets](const Request& req) { return handle_ui_file(req, assets); };
  router.add(http::verb::get, "/ui", handle, options);
  router.add(http::verb::get, "/ui/{file}", handle, options);
}

}  // namespace tcl::api
