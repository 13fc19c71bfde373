#include "api/handlers/uploads.h"

#include <boost/json.hpp>

#include "api/chunk_channel.h"
#include "api/handlers/platforms.h"
#include "api/http_error.h"
#include "api/ingest.h"

namespace tcl::api {
namespace json = boost::json;

namespace {

Result<registry::Platform> find_platform(registry::PlatformStore& platforms, const std::string& name) {
  if (!valid_platform_name(name)) return Status::not_found("platform '" + name + "' does not exist");
  return platforms.find(name);
}

Response upload(const Request& req, registry::PlatformStore& platforms, registry::UploadStore& uploads,
                registry::UploadKind kind, const UploadRouteOptions& limits) {
  auto platform = find_platform(platforms, req.param("name"));
  if (!platform) return error_response(platform.status());
  UploadOptions options;
  options.kind = kind;
  options.max_line_bytes = limits.max_line_bytes;
  options.idempotency_key = std::string(req.header("Idempotency-Key"));
  if (options.idempotency_key.size() > 255) {
    return error_response(Status::invalid_argument("Idempotency-Key is longer than 255 characters"),
                          json::object{{"header", "Idempotency-Key"}});
  }
  const std::string_view encoding = req.header("Content-Encoding");
  if (encoding == "gzip" || encoding == "x-gzip") {
    options.gzip = true;
  } else if (!encoding.empty() && encoding != "identity") {
    return error_response(http::status::unsupported_media_type, "UNSUPPORTED_MEDIA_TYPE",
                          "Content-Encoding '" + std::string(encoding) + "' is not supported; use gzip or none");
  }
  if (req.body_stream == nullptr) return error_response(Status::internal("upload route without a body stream"));
  auto outcome = run_upload(uploads, *platform, *req.body_stream, options);
  if (!outcome) return error_response(outcome.status());
  Response res;
  res.status = outcome->replayed ? http::status::ok : http::status::created;
  res.body = outcome->report_json;
  res.body.push_back('\n');
  if (outcome->replayed) res.headers["Idempotent-Replayed"] = "true";
  return res;
}

Response download(const Request& req, registry::PlatformStore& platforms, registry::UploadStore& uploads,
                  registry::UploadKind kind) {
  auto platform = find_platform(platforms, req.param("name"));
  if (!platform) return error_response(platform.status());
  Response res;
  res.content_type = "application/x-ndjson";
  const std::int64_t platform_id = platform->id;
  res.stream = [&uploads, platform_id, kind](ChunkChannel& out) {
    constexpr std::size_t kChunk = 64 << 10;
    std::string chunk;
    chunk.reserve(kChunk + 4096);
    bool client_gone = false;
    Status s = uploads.for_each_record(platform_id, kind, [&](const registry::StoredRecord& r) {
      chunk.append(r.record);
      chunk.push_back('\n');
      if (chunk.size() >= kChunk) {
        if (!out.push_wait(std::move(chunk))) {
          client_gone = true;
          return false;
        }
        chunk = std::string();
        chunk.reserve(kChunk + 4096);
      }
      return true;
    });
    if (client_gone) return Status::cancelled("client went away");
    if (!s) return s;
    if (!chunk.empty() && !out.push_wait(std::move(chunk))) return Status::cancelled("client went away");
    return Status::ok();
  };
  return res;
}

}  // namespace

void add_upload_routes(Router& router, registry::PlatformStore& platforms, registry::UploadStore& uploads,
                       UploadRouteOptions options) {
  using registry::UploadKind;
  const RouteOptions post{Access::kWrite, options.max_upload_bytes, /*stream_body=*/true};
  for (const UploadKind kind : {UploadKind::kMeasurements, UploadKind::kCandidates}) {
    const std::string path = "/v1/platforms/{name}/" + std::string(registry::upload_kind_name(kind));
    router.add(http::verb::post, path,
               [&platforms, &uploads, kind, options](const Request& req) {
                 return upload(req, platforms, uploads, kind, options);
               },
               post);
    router.add(http::verb::get, path, [&platforms, &uploads, kind](const Request& req) {
      return download(req, platforms, uploads, kind);
    });
  }
}

}  // namespace tcl::api
