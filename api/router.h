// api/router.h — maps (method, path) to a handler through route templates.
//
// Templates are literal segments and {param} segments: "/v1/platforms/{name}".
// A literal segment beats a parameter at the same position. match() tells
// "no such path" (404) from "path exists, wrong method" (405, with Allow).
// HEAD is served wherever GET is (the GET route matches; the server sends
// its header without the body).
// Each route carries the scope it needs and its body limit; the server reads
// those before it reads the body. Routes are added at start-up, then the
// router is read-only and safe to share between threads.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/http_types.h"
#include "registry/token_store.h"

namespace tcl::api {

using Handler = std::function<Response(const Request&)>;

// Who may call a route. kOpen needs no token (health, metrics).
enum class Access { kOpen, kRead, kWrite, kAdmin };

// Which threads run a route's handler (api/server.h), so that one kind of
// work never queues behind another:
//   kInline  — on the I/O thread itself; only for handlers that never block
//              (liveness, the API document).
//   kProbe   — a small pool of its own: readiness, which asks the database
//              but must answer while every handler thread is busy.
//   kMetrics — a pool of its own for /metrics, so a scrape flood queues
//              behind itself and never in front of readiness.
//   kDefault — the handler pool: SQL, inference, sampling.
//   kStream  — a bounded pool for handlers that wait on the network (a
//              streamed request body, a streamed answer); when all of its
//              slots are taken the request is answered 503 + Retry-After.
enum class Lane { kInline, kProbe, kMetrics, kDefault, kStream };

struct RouteOptions {
  Access access = Access::kRead;
  std::optional<std::size_t> body_limit;  // bytes; empty = server default
  // Hand the body to the handler chunk by chunk (Request::body_stream) as it
  // arrives, instead of reading it whole first: bounded memory for uploads.
  bool stream_body = false;
  Lane lane = Lane::kDefault;  // kStream is implied by stream_body
  // The body is JSON: a non-empty body with another Content-Type is 415.
  bool json_body = true;
};

struct Route {
  http::verb method;
  std::string path_template;
  std::vector<std::string> segments;  // split template; "{x}" marks a parameter
  Handler handler;
  RouteOptions options;
};

struct RouteMatch {
  const Route* route = nullptr;  // null when nothing matched
  std::map<std::string, std::string> params;
  std::vector<http::verb> allowed;  // set when the path matched another method
};

class Router {
 public:
  // Throws std::invalid_argument on a malformed or duplicate template (a
  // programming error found at start-up).
  void add(http::verb method, std::string path_template, Handler handler, RouteOptions options = {});
  RouteMatch match(http::verb method, std::string_view path) const;
  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
};

// Splits "/a/b/c" into {"a","b","c"}; percent-decodes each segment. Returns
// nullopt on a malformed escape.
std::optional<std::vector<std::string>> split_path(std::string_view path);
// Parses "a=1&b=x%20y" into a map (last value wins).
std::map<std::string, std::string> parse_query(std::string_view query);
// '+' is a space only in a query string (HTML forms); in a path it is itself.
std::optional<std::string> percent_decode(std::string_view s, bool plus_is_space = false);

}  // namespace tcl::api
