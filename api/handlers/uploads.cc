#include "api/handlers/uploads.h"

#include <boost/json.hpp>

#include <cstdio>
#include <memory>

#include "api/chunk_channel.h"
#include "api/handlers/platforms.h"
#include "api/http_error.h"
#include "api/ingest.h"
#include "api/http_metrics.h"

namespace tcl::api {
namespace json = boost::json;

namespace {

void observe(UploadKindMetrics& metrics, const Result<UploadOutcome>& outcome) {
  if (!outcome) return metrics.error->Increment();
  if (outcome->replayed) return metrics.replayed->Increment();
  const UploadTally& t = outcome->tally;
  metrics.stored->Increment();
  metrics.accepted->Increment(static_cast<double>(t.accepted));
  metrics.duplicate->Increment(static_cast<double>(t.duplicates));
  for (int i = 0; i < kRejectReasons; ++i) {
    metrics.rejected->Increment(static_cast<double>(t.rejected[i]));
    metrics.by_reason[i]->Increment(static_cast<double>(t.rejected[i]));
  }
  metrics.bytes->Increment(static_cast<double>(t.body_bytes));
}

}  // namespace

Response handle_upload(const Request& req, registry::PlatformStore& platforms, registry::UploadStore& uploads,
                       registry::UploadKind kind, const UploadRouteOptions& limits, UploadKindMetrics& metrics) {
  UploadOptions options;
  options.kind = kind;
  options.max_line_bytes = limits.max_line_bytes;
  options.inflate = limits.inflate;
  options.idempotency_key = std::string(req.header("Idempotency-Key"));
  if (Status s = check_idempotency_key(options.idempotency_key); !s) {
    return error_response(s, json::object{{"header", "Idempotency-Key"}});
  }
  auto platform = find_platform(platforms, req.param("name"));
  if (!platform) return error_response(platform.status());
  const std::string_view encoding = req.header("Content-Encoding");
  if (encoding == "gzip" || encoding == "x-gzip") {
    options.gzip = true;
  } else if (!encoding.empty() && encoding != "identity") {
    return error_response(http::status::unsupported_media_type, "UNSUPPORTED_MEDIA_TYPE",
                          "Content-Encoding '" + std::string(encoding) + "' is not supported; use gzip or none");
  }
  // The server gives every stream_body route a body stream, an empty one
  // when no body follows the header (api/server.h), so an empty body gets one
  // answer however it was sent.
  if (req.body_stream == nullptr) return error_response(Status::internal("upload route without a body stream"));
  auto outcome = run_upload(uploads, *platform, *req.body_stream, options);
  observe(metrics, outcome);
  if (!outcome) return error_response(outcome.status());
  Response res;
  res.status = outcome->replayed ? http::status::ok : http::status::created;
  res.body = outcome->report_json;
  res.body.push_back('\n');
  if (outcome->replayed) res.headers["Idempotent-Replayed"] = "true";
  return res;
}

Response handle_download(const Request& req, registry::PlatformStore& platforms, registry::UploadStore& uploads,
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

Status check_idempotency_key(std::string_view key) {
  if (key.size() > 255) {
    return Status::invalid_argument("Idempotency-Key is " + std::to_string(key.size()) +
                                    " characters long; at most 255 are allowed");
  }
  for (std::size_t i = 0; i < key.size(); ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c >= 0x21 && c <= 0x7e) continue;
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned>(c));
    return Status::invalid_argument(std::string("Idempotency-Key holds byte ") + byte + " at offset " +
                                    std::to_string(i) + "; it must be visible ASCII (0x21 to 0x7e)");
  }
  return Status::ok();
}

void add_upload_routes(Router& router, registry::PlatformStore& platforms, registry::UploadStore& uploads,
                       UploadRouteOptions options, prometheus::Registry& metrics) {
  using registry::UploadKind;
  const RouteOptions post{Access::kWrite, options.max_upload_bytes, /*stream_body=*/true};
  RouteOptions get;  // its producer waits on the client: the stream lane
  get.lane = Lane::kStream;
  for (const UploadKind kind : {UploadKind::kMeasurements, UploadKind::kCandidates}) {
    const std::string path = "/v1/platforms/{name}/" + std::string(registry::upload_kind_name(kind));
    auto kind_metrics = std::make_shared<UploadKindMetrics>(metrics, registry::upload_kind_name(kind));
    router.add(
        http::verb::post, path,
        [&platforms, &uploads, kind, options, kind_metrics](const Request& req) {
          return handle_upload(req, platforms, uploads, kind, options, *kind_metrics);
        },
        post);
    router.add(
        http::verb::get, path,
        [&platforms, &uploads, kind](const Request& req) { return handle_download(req, platforms, uploads, kind); },
        get);
  }
}

}  // namespace tcl::api
