#include "tools/api_client.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/json/parse.hpp>

namespace tcl::tools {
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

boost::json::value ApiResponse::json() const {
  boost::system::error_code ec;
  auto v = boost::json::parse(body, ec);
  return ec ? boost::json::value(nullptr) : v;
}

std::string ApiResponse::error_text() const {
  const auto j = json();
  if (j.is_object() && j.as_object().contains("error")) {
    const auto& e = j.at("error");
    return std::to_string(status) + " " + std::string(e.at("code").as_string()) + ": " +
           std::string(e.at("message").as_string());
  }
  return std::to_string(status) + ": " + body.substr(0, 200);
}

ApiClient::ApiClient(std::string base_url, std::string token) : token_(std::move(token)) {
  std::string rest = base_url;
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const std::size_t colon = rest.rfind(':');
  host_ = colon == std::string::npos ? rest : rest.substr(0, colon);
  port_ = colon == std::string::npos ? "80" : rest.substr(colon + 1);
}

ApiClient::~ApiClient() = default;

Status ApiClient::connect() {
  tcp::resolver resolver(ioc_);
  beast::error_code ec;
  auto endpoints = resolver.resolve(host_, port_, ec);
  if (ec) return Status::unavailable("cannot resolve " + host_ + ": " + ec.message());
  stream_ = std::make_unique<beast::tcp_stream>(ioc_);
  stream_->connect(endpoints, ec);
  if (ec) {
    stream_.reset();
    return Status::unavailable("cannot reach tcld at " + host_ + ":" + port_ + ": " + ec.message());
  }
  buffer_.clear();
  return Status::ok();
}

Result<ApiResponse> ApiClient::call(const std::string& method, const std::string& target, const std::string& body,
                                    const std::map<std::string, std::string>& headers) {
  // One retry on a stale keep-alive connection the server already closed.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!stream_) {
      if (Status s = connect(); !s) return s;
    }
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, host_);
    req.set(http::field::user_agent, "tclctl/" TCL_VERSION);
    if (!token_.empty()) req.set(http::field::authorization, "Bearer " + token_);
    if (!body.empty()) req.set(http::field::content_type, "application/json");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.keep_alive(true);
    req.prepare_payload();
    stream_->expires_after(std::chrono::minutes(10));
    beast::error_code ec;
    http::write(*stream_, req, ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(boost::none);
    if (!ec) http::read(*stream_, buffer_, parser, ec);
    if (ec) {
      stream_.reset();
      if (attempt == 0) continue;
      return Status::unavailable(method + " " + target + ": " + ec.message());
    }
    auto res = parser.release();
    ApiResponse out;
    out.status = static_cast<int>(res.result_int());
    out.body = std::move(res.body());
    for (const auto& f : res) out.headers[std::string(f.name_string())] = std::string(f.value());
    if (!res.keep_alive()) stream_.reset();
    return out;
  }
  return Status::unavailable("unreachable");
}

}  // namespace tcl::tools
