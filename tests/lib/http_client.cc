#include "tests/lib/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

namespace tcl::testing {
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

// Through Prism's proxy (tcld_process.h, contract mode) a response carries the
// exchange's violations of api/openapi.yaml in `sl-violations`. A request the
// document rejects is fine only when tcld rejected it too (4xx: the tests send
// bad requests on purpose); response violations fail in TcldProcess, from
// Prism's log, which also covers clients other than this one.
void check_request_violations(const HttpCall& call, const HttpResult& out) {
  auto it = out.headers.find("sl-violations");
  if (it == out.headers.end() || (out.status >= 400 && out.status < 500)) return;
  boost::system::error_code ec;
  auto violations = boost::json::parse(it->second, ec);
  if (ec || !violations.is_array()) {
    ADD_FAILURE() << call.method << " " << call.target << " -> " << out.status << ": " << it->second;
    return;
  }
  for (const auto& v : violations.as_array()) {
    const auto* location = v.is_object() ? v.as_object().if_contains("location") : nullptr;
    if (location != nullptr && location->is_array() && !location->as_array().empty() &&
        location->as_array()[0].is_string() && location->as_array()[0].as_string() == "request") {
      ADD_FAILURE() << "API contract: " << call.method << " " << call.target << " -> " << out.status
                    << " accepted a request api/openapi.yaml rejects: " << boost::json::serialize(v);
    }
  }
}

// The media type tcld documents for a body sent to `target` (api/openapi.yaml):
// record uploads take JSON lines, every other route JSON. tcld itself ignores
// Content-Type, but the contract proxy validates against it.
std::string default_content_type(const std::string& target) {
  const std::string path = target.substr(0, target.find('?'));
  const bool upload = path.ends_with("/measurements") || path.ends_with("/candidates");
  return upload ? "application/x-ndjson" : "application/json";
}

}  // namespace

boost::json::value HttpResult::json() const {
  boost::system::error_code ec;
  auto v = boost::json::parse(body, ec);
  return ec ? boost::json::value(nullptr) : v;
}

HttpConnection::HttpConnection(int port) : stream_(std::make_unique<beast::tcp_stream>(ioc_)) {
  beast::error_code ec;
  stream_->connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)), ec);
  if (ec) stream_.reset();
}

HttpConnection::~HttpConnection() {
  if (stream_) {
    beast::error_code ec;
    stream_->socket().shutdown(tcp::socket::shutdown_both, ec);
  }
}

bool HttpConnection::open() const { return stream_ != nullptr; }

HttpResult HttpConnection::send(const HttpCall& call) {
  HttpResult out;
  if (!stream_) {
    out.error = "not connected";
    return out;
  }
  http::request<http::string_body> req(http::string_to_verb(call.method), call.target, 11);
  req.set(http::field::host, "127.0.0.1");
  req.keep_alive(true);
  if (!call.token.empty()) req.set(http::field::authorization, "Bearer " + call.token);
  for (const auto& [k, v] : call.headers) req.set(k, v);
  if (!call.body.empty() && req.find(http::field::content_type) == req.end()) {
    req.set(http::field::content_type, default_content_type(call.target));
  }
  req.body() = call.body;
  if (!call.body.empty() || call.method == "POST" || call.method == "PUT") req.prepare_payload();
  stream_->expires_after(call.timeout);
  beast::error_code ec;
  http::write(*stream_, req, ec);
  if (ec) {
    out.error = "write: " + ec.message();
    return out;
  }
  http::response_parser<http::string_body> parser;
  parser.body_limit(1ull << 32);
  http::read(*stream_, buffer_, parser, ec);
  if (ec) {
    out.error = "read: " + ec.message();
    return out;
  }
  auto res = parser.release();
  out.status = static_cast<int>(res.result_int());
  out.body = res.body();
  for (const auto& f : res) out.headers[std::string(f.name_string())] = std::string(f.value());
  check_request_violations(call, out);
  return out;
}

HttpResult http_call(int port, const HttpCall& call) {
  HttpConnection c(port);
  if (!c.open()) {
    HttpResult r;
    r.error = "connect failed";
    return r;
  }
  return c.send(call);
}

}  // namespace tcl::testing
