// api/http_types.h — what a handler sees and returns.
//
// Handlers are plain functions Response(const Request&) that run on the
// blocking pool (never on an I/O thread), so they may call the database or
// the model. They never see a socket (Beast's handle_request habit).
#pragma once

#include <boost/beast/http.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "registry/token_store.h"

namespace tcl::api {

class ChunkChannel;

namespace http = boost::beast::http;

using BeastRequest = http::request<http::string_body>;

struct Request {
  const BeastRequest& raw;
  std::string_view path;                           // without the query string
  std::map<std::string, std::string> query;        // decoded ?k=v pairs
  std::map<std::string, std::string> path_params;  // {name} -> value, decoded
  std::string_view route;                          // the matched template, "/v1/platforms/{name}"
  std::optional<registry::TokenInfo> principal;    // who called, when authenticated
  // Routes with RouteOptions::stream_body: the body arrives here chunk by
  // chunk while the handler runs (raw.body() is empty). Null otherwise.
  ChunkChannel* body_stream = nullptr;
  // X-Request-Id: the client's when it sent a usable one, else generated;
  // echoed on the answer and written in the log line.
  std::string_view request_id;
  // Becomes true when the server sees the client close its connection while
  // the handler runs (plain HTTP, whole-body routes; a TLS peer's clean
  // close is not seen). Null when nobody watches. Long handlers read it to
  // stop work nobody will receive.
  const std::atomic<bool>* client_gone = nullptr;

  bool gone() const { return client_gone != nullptr && client_gone->load(std::memory_order_relaxed); }
  std::string_view body() const { return raw.body(); }
  std::string_view header(std::string_view name) const;
  const std::string& param(const std::string& name) const { return path_params.at(name); }
};

struct Response {
  http::status status = http::status::ok;
  std::string content_type = "application/json";
  std::string body;
  std::map<std::string, std::string> headers;  // extra headers (Location, Retry-After, ...)
  // When set, the body is produced after the header is sent: the function
  // runs on the worker pool and pushes chunks (push_wait) until it returns;
  // the answer goes out with chunked transfer encoding. A non-OK return cuts
  // the connection so the client sees an incomplete body, never a short one
  // that looks whole. `body` is ignored.
  std::function<Status(ChunkChannel& out)> stream;
  // Why a 5xx happened, in full: logged with the request, never sent.
  std::string log_cause;
};

}  // namespace tcl::api
