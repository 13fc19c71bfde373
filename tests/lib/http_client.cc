#include "tests/lib/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/json/parse.hpp>

namespace tcl::testing {
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

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
