// api/server.h — the HTTP/1.1 server (Boost.Beast, optional TLS).
//
// Data flow: listener accepts → session reads the header → looks up the
// route to pick its body limit (413 early when Content-Length is over it) →
// reads the body → hands the request to the blocking pool, where
// Server::handle() authenticates, calls the handler, records metrics and logs
// one line → the session writes the answer on its own strand → keep-alive.
// I/O threads never run handlers, so SQL, training or inference never stall
// other connections; a slow client only holds its own session until its
// read timeout.
//
// Shutdown: shutdown() (thread-safe, idempotent) stops accepting, makes
// draining() true (readiness reports 503), lets in-flight requests finish
// within `shutdown_grace`, then stops the I/O threads; run() returns.
//
// Thread-safety: start(), run() from one thread; shutdown(), draining() and
// port() from any thread. Does not own the router, the authenticator or the
// metrics; they must outlive the server.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "api/chunk_channel.h"
#include "api/http_metrics.h"
#include "api/router.h"
#include "core/status.h"
#include "registry/token_store.h"

namespace tcl::api {

struct ServerOptions {
  std::string host = "127.0.0.1";
  unsigned short port = 8080;          // 0 = pick a free port (tests)
  int io_threads = 2;                  // threads running sockets only
  int worker_threads = 4;              // threads running handlers (SQL, models)
  std::size_t default_body_limit = 1 << 20;  // bytes, when a route sets none
  std::size_t header_limit = 16 << 10;
  std::chrono::milliseconds read_timeout{30000};   // whole request, header + body
  std::chrono::milliseconds write_timeout{30000};
  std::chrono::milliseconds idle_timeout{60000};   // keep-alive wait for the next request
  std::chrono::milliseconds shutdown_grace{20000};
  std::string tls_cert_file;  // PEM chain; HTTPS when both files are set
  std::string tls_key_file;
};

// Maps a bearer token to its owner: kUnauthenticated for an unknown token,
// kUnavailable when it cannot be checked now. Called on worker threads.
using Authenticator = std::function<Result<registry::TokenInfo>(std::string_view token)>;

class Server {
 public:
  Server(ServerOptions options, const Router& router, Authenticator authenticate, HttpMetrics& metrics);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and listens (and loads TLS files). Errors name the address or file.
  Status start();
  // Serves until shutdown() has drained; blocks the calling thread, which
  // becomes one of the I/O threads.
  void run();
  void shutdown();
  bool draining() const { return draining_.load(); }
  unsigned short port() const { return bound_port_.load(); }

  // Routing, auth, the handler call, metrics and the log line. Public so
  // tests can drive the pipeline without a socket.
  // `body` carries the body of stream_body routes (else null).
  Response handle(const BeastRequest& req, ChunkChannel* body = nullptr);
  // The options of the route a request line goes to (defaults when none),
  // read before the body: its limit and whether it is streamed.
  RouteOptions route_options_for(http::verb method, std::string_view target) const;

  struct Impl;  // sessions live in server.cc and reach the server through it

 private:
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> draining_{false};
  std::atomic<unsigned short> bound_port_{0};
};

}  // namespace tcl::api
