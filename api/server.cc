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
#include "api/chunk_channel.h"
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

// One connection: read header → read body (whole, or streamed to the handler)
// → handle on the pool → write (whole, or streamed from the handler) →
// repeat. CRTP over the plain and the TLS stream, as in Beast's flex server.
// Every member below is touched only on the session's strand.
template <class Derived>
class Session {
 public:
  explicit Session(Server::Impl& server) : server_(server) {}

 protected:
  static constexpr std::size_t kChunkBytes = 64 << 10;

  Derived& derived() { return static_cast<Derived&>(*this); }
  auto& lowest() { return beast::get_lowest_layer(derived().stream()); }

  void do_read() {
    header_parser_.emplace();
    header_parser_->header_limit(static_cast<std::uint32_t>(server_.options.header_limit));
    // No limit yet: Beast would reject a large Content-Length while parsing the
    // header, before we know the route (and its limit) it is for.
    header_parser_->body_limit(boost::none);
    body_stream_.reset();
    body_done_ = true;
    lowest().expires_after(server_.options.idle_timeout);
    http::async_read_header(derived().stream(), buffer_, *header_parser_,
                            beast::bind_front_handler(&Session::on_read_header, derived().shared_from_this()));
  }

  void on_read_header(beast::error_code ec, std::size_t) {
    if (ec) return fail_read(ec, header_parser_->get());
    in_flight_.emplace(server_);
    const auto& head = header_parser_->get();
    const RouteOptions route = server_.self.route_options_for(head.method(), head.target());
    const std::size_t limit = route.body_limit.value_or(server_.options.default_body_limit);
    if (auto len = header_parser_->content_length(); len && *len > limit) {
      // Answer before reading a body we would refuse anyway, then close:
      // the unread body makes the connection unusable.
      return write_error(head, http::status::payload_too_large, "PAYLOAD_TOO_LARGE",
                         "request body of " + std::to_string(*len) + " bytes exceeds this route's limit of " +
                             std::to_string(limit) + " bytes");
    }
    if (route.stream_body && !header_parser_->is_done()) {
      stream_parser_.emplace(std::move(*header_parser_));
      stream_parser_->body_limit(limit);
      body_stream_ = std::make_shared<ChunkChannel>(16);
      body_done_ = false;
      auto req = std::make_shared<BeastRequest>();
      req->base() = stream_parser_->get().base();
      dispatch(req, body_stream_);
      return read_chunk();
    }
    parser_.emplace(std::move(*header_parser_));
    parser_->body_limit(limit);
    lowest().expires_after(server_.options.read_timeout);
    http::async_read(derived().stream(), buffer_, *parser_,
                     beast::bind_front_handler(&Session::on_read, derived().shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::body_limit) {
      return write_error(parser_->get(), http::status::payload_too_large, "PAYLOAD_TOO_LARGE",
                         "request body exceeds this route's limit");
    }
    if (ec) return fail_read(ec, parser_->get());
    dispatch(std::make_shared<BeastRequest>(parser_->release()), nullptr);
  }

  // Streamed bodies: read up to kChunkBytes, hand them over, repeat while
  // the handler keeps up (the channel bounds what is buffered).
  void read_chunk() {
    if (body_done_) return;
    chunk_.resize(kChunkBytes);
    stream_parser_->get().body().data = chunk_.data();
    stream_parser_->get().body().size = chunk_.size();
    // Beast sizes each socket read by the buffer's free capacity (512 bytes
    // at first): a body read in 512-byte reads costs a third of the upload's
    // throughput, so give the buffer a chunk's room once.
    if (buffer_.capacity() < kChunkBytes) buffer_.reserve(kChunkBytes);
    lowest().expires_after(server_.options.read_timeout);  // per chunk: an idle timeout, not a total
    http::async_read_some(derived().stream(), buffer_, *stream_parser_,
                          beast::bind_front_handler(&Session::on_chunk, derived().shared_from_this()));
  }

  void on_chunk(beast::error_code ec, std::size_t) {
    if (ec == http::error::need_buffer) ec = {};
    chunk_.resize(chunk_.size() - stream_parser_->get().body().size);
    if (ec) {
      body_done_ = true;  // nothing more will be read on this connection
      if (ec == http::error::body_limit) {
        body_stream_->close(Status::resource_exhausted("request body exceeds this route's limit"));
      } else {
        body_stream_->close(Status::cancelled("the client stopped sending the body (" + ec.message() + ")"));
      }
      if (pending_) {
        pending_.reset();  // nobody is left to read the answer
        in_flight_.reset();
      }
      return;
    }
    if (!chunk_.empty()) body_stream_->push(std::move(chunk_));  // dropped when the handler is done
    chunk_ = std::string();
    if (stream_parser_->is_done()) {
      body_done_ = true;
      body_stream_->close();
      if (pending_) {
        auto p = std::move(*pending_);
        pending_.reset();
        write(p.response, p.keep_alive, p.version);
      }
      return;
    }
    auto self = derived().shared_from_this();
    if (body_stream_->wait_for_space([self] {
          asio::post(beast::get_lowest_layer(self->stream()).get_executor(), [self] { self->read_chunk(); });
        })) {
      return;  // resumed when the handler has taken a chunk
    }
    read_chunk();
  }

  // Runs the handler on the worker pool; the answer comes back to the strand.
  void dispatch(std::shared_ptr<BeastRequest> req, std::shared_ptr<ChunkChannel> body) {
    asio::post(server_.workers, [self = derived().shared_from_this(), req, body] {
      auto res = std::make_shared<Response>(self->server_.self.handle(*req, body.get()));
      // The handler is done with the body: stop the session from buffering more.
      if (body) body->close(Status::cancelled("the handler finished before reading the whole body"));
      const bool keep_alive = req->keep_alive();
      const unsigned version = req->version();
      if (!res->stream) {
        asio::dispatch(beast::get_lowest_layer(self->stream()).get_executor(),
                       [self, res, keep_alive, version] { self->write(*res, keep_alive, version); });
        return;
      }
      auto out = std::make_shared<ChunkChannel>(8);
      asio::dispatch(beast::get_lowest_layer(self->stream()).get_executor(),
                     [self, res, out, keep_alive, version] { self->write_stream(*res, out, keep_alive, version); });
      out->close(res->stream(*out));  // produce on this worker thread; blocks while the client is slow
    });
  }

  void fail_read(beast::error_code ec, const http::request_header<>& head) {
    in_flight_.reset();
    if (ec == http::error::end_of_stream || ec == asio::error::eof) return derived().do_eof();
    if (ec == beast::error::timeout) {
      spdlog::debug("http: closing connection after read timeout");
      return;  // the stream closed the socket already
    }
    if (ec == asio::error::operation_aborted) return;
    if (ec.category() == make_error_code(http::error::bad_target).category()) {
      // Malformed HTTP: answer 400 once, then close.
      return write_error(head, http::status::bad_request, "BAD_REQUEST", "malformed HTTP request: " + ec.message());
    }
    spdlog::debug("http: read failed: {}", ec.message());
  }

  void write_error(const http::request_header<>& head, http::status status, std::string_view code,
                   const std::string& message) {
    const std::string route = "(unrouted)";
    const std::string method(http::to_string(head.method()));
    server_.metrics.observe(route, method, static_cast<int>(status), 0.0);
    spdlog::info("http method={} route={} status={} reason=\"{}\"", method, route, static_cast<int>(status), message);
    body_done_ = false;  // forces Connection: close
    write(error_response(status, code, message), /*keep_alive=*/false, head.version() ? head.version() : 11);
  }

  template <class Message>
  void prepare(Message& h, const Response& r, bool keep_alive) {
    h.set(http::field::server, "tcld/" TCL_VERSION);
    h.set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) h.set(k, v);
    // An unread request body makes the connection unusable for the next request.
    h.keep_alive(keep_alive && body_done_ && !server_.self.draining());
  }

  void write(const Response& r, bool keep_alive, unsigned version) {
    if (!body_done_ && body_stream_) {
      // The handler answered before the body ended (a replayed upload, an
      // early error). Clients send the whole body before they read, so read
      // and drop the rest, then answer — the connection stays usable.
      pending_.emplace(PendingAnswer{r, keep_alive, version});
      return;
    }
    auto res = std::make_shared<http::response<http::string_body>>(r.status, version);
    prepare(*res, r, keep_alive);
    res->body() = r.body;
    res->prepare_payload();
    lowest().expires_after(server_.options.write_timeout);
    http::async_write(derived().stream(), *res,
                      [self = derived().shared_from_this(), res](beast::error_code ec, std::size_t) {
                        self->on_write(ec, res->need_eof());
                      });
  }

  // Streamed answers: the header, then one HTTP chunk per channel chunk,
  // then the last chunk — or a cut connection when the producer failed.
  void write_stream(const Response& r, std::shared_ptr<ChunkChannel> out, bool keep_alive, unsigned version) {
    out_ = std::move(out);
    stream_res_ = std::make_shared<http::response<http::empty_body>>(r.status, version);
    prepare(*stream_res_, r, keep_alive);
    stream_res_->chunked(true);
    stream_sr_ = std::make_shared<http::response_serializer<http::empty_body>>(*stream_res_);
    lowest().expires_after(server_.options.write_timeout);
    http::async_write_header(derived().stream(), *stream_sr_,
                             [self = derived().shared_from_this()](beast::error_code ec, std::size_t) {
                               if (ec) return self->abort_stream(ec);
                               self->pump();
                             });
  }

  void pump() {
    auto self = derived().shared_from_this();
    switch (out_->try_pop(&out_chunk_)) {
      case ChunkChannel::Pop::kChunk:
        lowest().expires_after(server_.options.write_timeout);
        asio::async_write(derived().stream(), http::make_chunk(asio::buffer(out_chunk_)),
                          [self](beast::error_code ec, std::size_t) {
                            if (ec) return self->abort_stream(ec);
                            self->pump();
                          });
        return;
      case ChunkChannel::Pop::kEmpty:
        if (out_->wait_for_data([self] {
              asio::post(beast::get_lowest_layer(self->stream()).get_executor(), [self] { self->pump(); });
            })) {
          return;
        }
        return pump();
      case ChunkChannel::Pop::kEnd:
        if (!out_->status().is_ok()) {
          spdlog::warn("http: streamed answer failed midway: {}", out_->status().to_string());
          in_flight_.reset();
          beast::error_code ignored;
          lowest().socket().close(ignored);
          return;
        }
        asio::async_write(derived().stream(), http::make_chunk_last(),
                          [self](beast::error_code ec, std::size_t) { self->on_write(ec, !self->stream_res_->keep_alive()); });
        return;
    }
  }

  void abort_stream(beast::error_code ec) {
    spdlog::debug("http: streamed write failed: {}", ec.message());
    out_->close(Status::cancelled("client went away"));
    in_flight_.reset();
  }

  void on_write(beast::error_code ec, bool close) {
    in_flight_.reset();
    out_.reset();
    if (ec) {
      spdlog::debug("http: write failed: {}", ec.message());
      return;
    }
    if (close) return derived().do_eof();
    do_read();
  }

  Server::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> header_parser_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::request_parser<http::buffer_body>> stream_parser_;
  std::shared_ptr<ChunkChannel> body_stream_;  // request body → handler (streamed routes)
  std::string chunk_;                          // the chunk being read
  bool body_done_ = true;                      // the request body has been read to its end
  std::shared_ptr<ChunkChannel> out_;          // handler → response body (streamed answers)
  std::string out_chunk_;
  std::shared_ptr<http::response<http::empty_body>> stream_res_;
  std::shared_ptr<http::response_serializer<http::empty_body>> stream_sr_;
  struct PendingAnswer {
    Response response;
    bool keep_alive;
    unsigned version;
  };
  std::optional<PendingAnswer> pending_;       // an answer waiting for the body's end
  std::optional<InFlight> in_flight_;
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

RouteOptions Server::route_options_for(http::verb method, std::string_view target) const {
  const std::string_view path = target.substr(0, target.find('?'));
  const RouteMatch m = impl_->router.match(method, path);
  return m.route != nullptr ? m.route->options : RouteOptions{};
}

Response Server::handle(const BeastRequest& raw, ChunkChannel* body) {
  Impl& s = *impl_;
  const auto started = Clock::now();
  const std::string_view target = raw.target();
  const std::size_t q = target.find('?');
  Request req{raw, target.substr(0, q), {}, {}, "(unrouted)", std::nullopt, body};
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
