#include "api/server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <thread>
#include <vector>

#include "api/auth.h"
#include "api/http_error.h"

namespace tcl::api {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

std::string allow_header(const std::vector<http::verb>& verbs) {
  std::string s;
  for (http::verb v : verbs) {
    if (!s.empty()) s += ", ";
    s += std::string(http::to_string(v));
  }
  return s;
}

}  // namespace

std::string_view Request::header(std::string_view name) const {
  auto it = raw.find(name);
  return it == raw.end() ? std::string_view{} : std::string_view(it->value());
}

struct Server::Impl {
  Impl(Server& s, ServerOptions o, const Router& r, Authenticator a, HttpMetrics& m)
      : self(s), options(std::move(o)), router(r), authenticate(std::move(a)), metrics(m),
        ioc(options.io_threads), acceptor(asio::make_strand(ioc)), workers(options.worker_threads),
        ssl_ctx(ssl::context::tls_server) {}

  void do_accept();
  void on_accept(beast::error_code ec, tcp::socket socket);
  void drain_tick();

  Server& self;
  const ServerOptions options;
  const Router& router;
  Authenticator authenticate;
  HttpMetrics& metrics;
  asio::io_context ioc;
  tcp::acceptor acceptor;
  asio::thread_pool workers;
  ssl::context ssl_ctx;
  bool tls = false;
  std::atomic<int> in_flight{0};
  std::atomic<bool> stopped{false};
  Clock::time_point drain_deadline;
  std::unique_ptr<asio::steady_timer> drain_timer;
};

// Counts a request from its full header to its written answer.
class InFlight {
 public:
  explicit InFlight(Server::Impl& s) : s_(s) {
    s_.in_flight.fetch_add(1);
    s_.metrics.in_flight().Increment();
  }
  ~InFlight() {
    s_.metrics.in_flight().Decrement();
    s_.in_flight.fetch_sub(1);
  }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  Server::Impl& s_;
};

// One connection: read header → read body → handle on the pool → write →
// repeat. CRTP over the plain and the TLS stream, as in Beast's flex server.
template <class Derived>
class Session {
 public:
  explicit Session(Server::Impl& server) : server_(server) {}

 protected:
  Derived& derived() { return static_cast<Derived&>(*this); }

  void do_read() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.options.header_limit));
    parser_->body_limit(server_.options.default_body_limit);
    beast::get_lowest_layer(derived().stream()).expires_after(server_.options.idle_timeout);
    http::async_read_header(derived().stream(), buffer_, *parser_,
                            beast::bind_front_handler(&Session::on_read_header, derived().shared_from_this()));
  }

  void on_read_header(beast::error_code ec, std::size_t) {
    if (ec) return fail_read(ec);
    in_flight_.emplace(server_);
    started_ = Clock::now();
    const auto& req = parser_->get();
    const std::size_t limit = server_.self.body_limit_for(req.method(), req.target());
    parser_->body_limit(limit);
    if (auto len = parser_->content_length(); len && *len > limit) {
      // Answer before reading a body we would refuse anyway, then close:
      // the unread body makes the connection unusable.
      return write_error(http::status::payload_too_large, "PAYLOAD_TOO_LARGE",
                         "request body of " + std::to_string(*len) + " bytes exceeds this route's limit of " +
                             std::to_string(limit) + " bytes");
    }
    beast::get_lowest_layer(derived().stream()).expires_after(server_.options.read_timeout);
    http::async_read(derived().stream(), buffer_, *parser_,
                     beast::bind_front_handler(&Session::on_read, derived().shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::body_limit) {
      return write_error(http::status::payload_too_large, "PAYLOAD_TOO_LARGE",
                         "request body exceeds this route's limit");
    }
    if (ec) return fail_read(ec);
    auto req = std::make_shared<BeastRequest>(parser_->release());
    // Handlers may block (SQL, models): run them on the worker pool and come
    // back to this session's strand to write.
    asio::post(server_.workers, [self = derived().shared_from_this(), req] {
      auto res = std::make_shared<Response>(self->server_.self.handle(*req));
      const bool keep_alive = req->keep_alive();
      const unsigned version = req->version();
      asio::dispatch(beast::get_lowest_layer(self->stream()).get_executor(),
                     [self, res, keep_alive, version] { self->write(*res, keep_alive, version); });
    });
  }

  void fail_read(beast::error_code ec) {
    in_flight_.reset();
    if (ec == http::error::end_of_stream || ec == asio::error::eof) return derived().do_eof();
    if (ec == beast::error::timeout) {
      spdlog::debug("http: closing connection after read timeout");
      return;  // the stream closed the socket already
    }
    if (ec == asio::error::operation_aborted) return;
    if (ec.category() == make_error_code(http::error::bad_target).category()) {
      // Malformed HTTP: answer 400 once, then close.
      return write_error(http::status::bad_request, "BAD_REQUEST", "malformed HTTP request: " + ec.message());
    }
    spdlog::debug("http: read failed: {}", ec.message());
  }

  void write_error(http::status status, std::string_view code, const std::string& message) {
    Response r = error_response(status, code, message);
    const auto& req = parser_->get();
    const std::string route = "(unrouted)";
    server_.metrics.observe(route, std::string(http::to_string(req.method())), static_cast<int>(status), 0.0);
    spdlog::info("http method={} route={} status={} reason=\"{}\"", std::string(http::to_string(req.method())), route, static_cast<int>(status),
                 message);
    write(r, /*keep_alive=*/false, req.version() ? req.version() : 11);
  }

  void write(const Response& r, bool keep_alive, unsigned version) {
    auto res = std::make_shared<http::response<http::string_body>>(r.status, version);
    res->set(http::field::server, "tcld/" TCL_VERSION);
    res->set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res->set(k, v);
    res->body() = r.body;
    res->keep_alive(keep_alive && !server_.self.draining());
    res->prepare_payload();
    beast::get_lowest_layer(derived().stream()).expires_after(server_.options.write_timeout);
    http::async_write(derived().stream(), *res,
                      [self = derived().shared_from_this(), res](beast::error_code ec, std::size_t) {
                        self->on_write(ec, res->need_eof());
                      });
  }

  void on_write(beast::error_code ec, bool close) {
    in_flight_.reset();
    if (ec) {
      spdlog::debug("http: write failed: {}", ec.message());
      return;
    }
    if (close) return derived().do_eof();
    do_read();
  }

  Server::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<InFlight> in_flight_;
  Clock::time_point started_;
};

class PlainSession : public Session<PlainSession>, public std::enable_shared_from_this<PlainSession> {
 public:
  PlainSession(Server::Impl& server, tcp::socket&& socket) : Session(server), stream_(std::move(socket)) {}
  void run() {
    asio::dispatch(stream_.get_executor(), beast::bind_front_handler(&PlainSession::do_read, shared_from_this()));
  }
  beast::tcp_stream& stream() { return stream_; }
  void do_eof() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }

 private:
  friend class Session<PlainSession>;
  beast::tcp_stream stream_;
};

class TlsSession : public Session<TlsSession>, public std::enable_shared_from_this<TlsSession> {
 public:
  TlsSession(Server::Impl& server, tcp::socket&& socket, ssl::context& ctx)
      : Session(server), stream_(std::move(socket), ctx) {}
  void run() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      beast::get_lowest_layer(self->stream_).expires_after(self->server_.options.read_timeout);
      self->stream_.async_handshake(ssl::stream_base::server, [self](beast::error_code ec) {
        if (ec) {
          spdlog::debug("http: TLS handshake failed: {}", ec.message());
          return;
        }
        self->do_read();
      });
    });
  }
  beast::ssl_stream<beast::tcp_stream>& stream() { return stream_; }
  void do_eof() {
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(5));
    stream_.async_shutdown([self = shared_from_this()](beast::error_code) {});
  }

 private:
  friend class Session<TlsSession>;
  beast::ssl_stream<beast::tcp_stream> stream_;
};

void Server::Impl::do_accept() {
  acceptor.async_accept(asio::make_strand(ioc), beast::bind_front_handler(&Impl::on_accept, this));
}

void Server::Impl::on_accept(beast::error_code ec, tcp::socket socket) {
  if (ec) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    spdlog::warn("http: accept failed: {}", ec.message());  // keep accepting (fd exhaustion is transient)
  } else if (tls) {
    std::make_shared<TlsSession>(*this, std::move(socket), ssl_ctx)->run();
  } else {
    std::make_shared<PlainSession>(*this, std::move(socket))->run();
  }
  if (acceptor.is_open()) do_accept();
}

void Server::Impl::drain_tick() {
  if (in_flight.load() == 0 || Clock::now() >= drain_deadline) {
    if (in_flight.load() != 0) {
      spdlog::warn("http: grace period over with {} requests in flight; stopping", in_flight.load());
    }
    ioc.stop();
    return;
  }
  drain_timer->expires_after(std::chrono::milliseconds(20));
  drain_timer->async_wait([this](beast::error_code) { drain_tick(); });
}

Server::Server(ServerOptions options, const Router& router, Authenticator authenticate, HttpMetrics& metrics)
    : impl_(std::make_unique<Impl>(*this, std::move(options), router, std::move(authenticate), metrics)) {}

Server::~Server() {
  impl_->ioc.stop();
  impl_->workers.join();
}

Status Server::start() {
  Impl& s = *impl_;
  if (!s.options.tls_cert_file.empty() || !s.options.tls_key_file.empty()) {
    if (s.options.tls_cert_file.empty() || s.options.tls_key_file.empty()) {
      return Status::invalid_argument("TLS needs both --tls-cert and --tls-key");
    }
    beast::error_code ec;
    s.ssl_ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                          ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    s.ssl_ctx.use_certificate_chain_file(s.options.tls_cert_file, ec);
    if (ec) return Status::invalid_argument("TLS certificate " + s.options.tls_cert_file + ": " + ec.message());
    s.ssl_ctx.use_private_key_file(s.options.tls_key_file, ssl::context::pem, ec);
    if (ec) return Status::invalid_argument("TLS key " + s.options.tls_key_file + ": " + ec.message());
    s.tls = true;
  }
  beast::error_code ec;
  const auto address = asio::ip::make_address(s.options.host, ec);
  if (ec) return Status::invalid_argument("listen address '" + s.options.host + "': " + ec.message());
  const tcp::endpoint endpoint(address, s.options.port);
  const std::string where = s.options.host + ":" + std::to_string(s.options.port);
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::unavailable("cannot listen on " + where + ": " + ec.message());
  bound_port_ = s.acceptor.local_endpoint().port();
  s.do_accept();
  spdlog::info("http: listening on {}://{}:{}", s.tls ? "https" : "http", s.options.host, bound_port_.load());
  return Status::ok();
}

void Server::run() {
  Impl& s = *impl_;
  std::vector<std::thread> threads;
  for (int i = 1; i < s.options.io_threads; ++i) threads.emplace_back([&s] { s.ioc.run(); });
  s.ioc.run();
  for (auto& t : threads) t.join();
  s.workers.join();
}

void Server::shutdown() {
  if (draining_.exchange(true)) return;
  Impl& s = *impl_;
  asio::post(s.acceptor.get_executor(), [&s] {
    beast::error_code ec;
    s.acceptor.close(ec);
    spdlog::info("http: draining {} in-flight requests (grace {} ms)", s.in_flight.load(),
                 s.options.shutdown_grace.count());
    s.drain_deadline = Clock::now() + s.options.shutdown_grace;
    s.drain_timer = std::make_unique<asio::steady_timer>(s.ioc);
    s.drain_tick();
  });
}

std::size_t Server::body_limit_for(http::verb method, std::string_view target) const {
  const std::string_view path = target.substr(0, target.find('?'));
  const RouteMatch m = impl_->router.match(method, path);
  if (m.route != nullptr && m.route->options.body_limit) return *m.route->options.body_limit;
  return impl_->options.default_body_limit;
}

Response Server::handle(const BeastRequest& raw) {
  Impl& s = *impl_;
  const auto started = Clock::now();
  const std::string_view target = raw.target();
  const std::size_t q = target.find('?');
  Request req{raw, target.substr(0, q), {}, {}, "(unrouted)", std::nullopt};
  if (q != std::string_view::npos) req.query = parse_query(target.substr(q + 1));

  Response res;
  const RouteMatch m = s.router.match(raw.method(), req.path);
  if (m.route == nullptr && !m.allowed.empty()) {
    res = error_response(http::status::method_not_allowed, "METHOD_NOT_ALLOWED",
                         std::string(raw.method_string()) + " is not allowed on " + std::string(req.path));
    res.headers["Allow"] = allow_header(m.allowed);
  } else if (m.route == nullptr) {
    res = error_response(http::status::not_found, "NOT_FOUND", "no route for " + std::string(req.path));
  } else {
    req.route = m.route->path_template;
    req.path_params = m.params;
    std::optional<Response> denied;
    const Access access = m.route->options.access;
    if (access != Access::kOpen) {
      const auto token = parse_bearer(req.header("Authorization"));
      if (!token) {
        denied = error_response(Status::unauthenticated("this route needs a bearer token (Authorization: Bearer ...)"));
      } else if (auto who = s.authenticate(*token); !who) {
        denied = error_response(who.status());
      } else if (!scope_allows(access, who->scope)) {
        denied = error_response(Status::permission_denied("token '" + who->name + "' has scope " +
                                                          std::string(registry::scope_name(who->scope)) +
                                                          "; this route needs " + std::string(access_name(access))));
      } else {
        req.principal = *who;
      }
    }
    if (denied) {
      res = std::move(*denied);
    } else {
      try {
        res = m.route->handler(req);
      } catch (const std::exception& e) {
        spdlog::error("http: handler for {} {} threw: {}", std::string(raw.method_string()), m.route->path_template,
                      e.what());
        res = error_response(Status::internal("unexpected error; see the daemon log"));
      }
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  const int code = static_cast<int>(res.status);
  s.metrics.observe(std::string(req.route), std::string(raw.method_string()), code, seconds);
  spdlog::info("http method={} route={} status={} duration_ms={:.3f}", std::string(raw.method_string()), std::string(req.route), code,
               seconds * 1e3);
  return res;
}

}  // namespace tcl::api
