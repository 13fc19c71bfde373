// tools/api_client.h — tclctl's view of tcld: HTTP/1.1 calls (Boost.Beast),
// JSON in and out. Speaks only the public API (DESIGN §8); knows nothing of
// the daemon's internals. One keep-alive connection, reopened when the
// server closes it. Not thread-safe.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/value.hpp>

#include <map>
#include <memory>
#include <string>

#include "core/status.h"

namespace tcl::tools {

struct ApiResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;
  // The body as JSON (null when it is not JSON).
  boost::json::value json() const;
  // "409 ALREADY_EXISTS: platform 'x' exists" from an error body.
  std::string error_text() const;
};

class ApiClient {
 public:
  // `base_url` is http://host:port (https is not supported by tclctl yet).
  ApiClient(std::string base_url, std::string token);
  ~ApiClient();
  // kUnavailable when the daemon cannot be reached; any HTTP status is OK.
  Result<ApiResponse> call(const std::string& method, const std::string& target, const std::string& body = "",
                           const std::map<std::string, std::string>& headers = {});

 private:
  Status connect();
  std::string host_, port_, token_;
  boost::asio::io_context ioc_;
  std::unique_ptr<boost::beast::tcp_stream> stream_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace tcl::tools
