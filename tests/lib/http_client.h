// tests/lib/http_client.h — a small blocking HTTP/1.1 client for tests
// (Boost.Beast over a real loopback socket). One connection per call unless
// a Connection is kept; not thread-safe per Connection. Through the contract
// proxy (tcld_process.h) a response whose request broke api/openapi.yaml is a
// test failure unless its status is 4xx.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <memory>
#include <string>

namespace tcl::testing {

// Header names compare case-insensitively, as in HTTP: a proxy may lower-case them.
struct HeaderNameLess {
  bool operator()(const std::string& a, const std::string& b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
      return std::tolower(static_cast<unsigned char>(x)) < std::tolower(static_cast<unsigned char>(y));
    });
  }
};

struct HttpResult {
  int status = 0;  // 0 when the connection failed
  std::string body;
  std::map<std::string, std::string, HeaderNameLess> headers;
  std::string error;                // transport error, when status == 0
  boost::json::value json() const;  // parses body; null on failure
};

struct HttpCall {
  std::string method = "GET";
  std::string target = "/";
  std::string body;
  std::string token;                           // sent as Authorization: Bearer <token> when non-empty
  std::map<std::string, std::string> headers;  // a body without Content-Type gets the documented one
  std::chrono::milliseconds timeout{15000};
};

// A keep-alive connection to 127.0.0.1:port.
class HttpConnection {
 public:
  explicit HttpConnection(int port);
  ~HttpConnection();
  HttpResult send(const HttpCall& call);
  bool open() const;

 private:
  boost::asio::io_context ioc_;
  std::unique_ptr<boost::beast::tcp_stream> stream_;
  boost::beast::flat_buffer buffer_;
};

HttpResult http_call(int port, const HttpCall& call);
inline HttpResult http_get(int port, const std::string& target, const std::string& token = "") {
  return http_call(port, HttpCall{"GET", target, "", token, {}, std::chrono::milliseconds(15000)});
}

}  // namespace tcl::testing
