// api/server.h — the HTTP/1.1 server (Boost.Beast, optional TLS).
//
// Data flow: listener accepts → session reads the header → looks up the
// route (its body limit: 413 early when Content-Length is over it; its lane)
// → reads the body → hands the request to its lane's threads, where
// Server::handle() authenticates, calls the handler, records metrics and logs
// one line → the session writes the answer on its own strand → keep-alive.
//
// Lanes (RouteOptions::lane) keep one kind of work from queueing behind
// another: liveness runs on the I/O thread, readiness on a probe pool,
// /metrics on a pool of its own, ordinary handlers on the worker pool, and handlers that wait on the
// network (streamed uploads and downloads) on a stream pool of `max_streams`
// threads; a request that finds no free stream slot is answered 503 +
// Retry-After at once. So a slow peer holds its own connection and at most
// one stream slot, never a worker thread.
//
// Slow peers: a streamed or ordinary request body must arrive at
// `min_request_body_rate` bytes/s on average once `min_rate_grace` has
// passed (time the handler spends not reading does not count), and an answer
// must be taken at `min_response_rate` (time waiting for the handler's next
// chunk does not count); `read_timeout` bounds each wait for body bytes and
// `write_timeout` each write (a whole answer, or one chunk of a streamed one) on
// the socket. A peer that breaks a rule is disconnected and counted in
// tcld_http_connections_cut_total{reason}.
//
// Framing: an answer is sent only once the request body has been read to its
// end and validly; an answer that the handler gave early waits for the end.
// A body that ends in a framing error gets 400 naming it (413 over the limit)
// instead of the handler's answer, with Connection: close, so the bytes after
// it are never taken as a request. Two Host headers are 400; a
// Transfer-Encoding other than chunked is 501.
//
// Admission (api/admission.h): a connection over `max_connections` or over
// `max_connections_per_address` is closed at accept; at the global cap (or
// out of file descriptors) accepting pauses briefly instead of spinning. A
// request with a body is checked before any of its body is read — route,
// token and scope, Content-Type, the route's limit, a stream slot within its
// client's share — and only then invited with `100 Continue` when it asked
// for it; refused bodies are never buffered. Too many failed tokens from one
// address are answered 429 without a lookup. An answer that closes the
// connection before the client finished sending (413, 401, ...) is followed
// by a lingering close (the rest is read and dropped for a bounded time) so
// the client reads the answer instead of a reset.
//
// Chunked bodies: the read buffer is bounded (header limit + one chunk), so
// chunk-size lines, extensions and trailers cannot grow memory; extension
// bytes count against the route's body limit. HTTP/1.0 clients get streamed
// answers without chunked encoding, ended by the close.
//
// Shutdown: shutdown() (thread-safe, idempotent) stops accepting, makes
// draining() true (readiness reports 503), lets in-flight requests finish
// within `shutdown_grace`, then fails every streamed body and answer still
// open (their handlers see cancelled and roll back) and stops the I/O
// threads; run() returns.
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
  unsigned short port = 8080;               // 0 = pick a free port (tests)
  int io_threads = 2;                       // threads running sockets only
  int worker_threads = 4;                   // threads running handlers (SQL, models)
  int probe_threads = 2;                    // threads running readiness
  int metrics_threads = 1;                  // threads running /metrics
  int max_streams = 8;                      // stream-lane handlers at once; more get 503
  std::size_t min_request_body_rate = 240;  // bytes/s after the grace; 0 = no rule
  std::size_t min_response_rate = 240;      // bytes/s after the grace; 0 = no rule
  std::chrono::milliseconds min_rate_grace{5000};
  std::size_t default_body_limit = 1 << 20;  // bytes, when a route sets none
  std::size_t header_limit = 16 << 10;
  std::chrono::milliseconds read_timeout{30000};   // each wait for body bytes
  std::chrono::milliseconds write_timeout{30000};  // one write: a whole answer, or one streamed chunk
  std::chrono::milliseconds idle_timeout{60000};   // keep-alive wait for the next request
  std::chrono::milliseconds shutdown_grace{20000};
  // api/admission.h. max_connections 0 = as many as the open-file limit allows (up to 10,000).
  int max_connections = 0;
  int max_connections_per_address = 256;  // 0 = no per-address cap (behind a proxy)
  int max_streams_per_client = 4;         // stream slots one token (or tokenless address) may hold
  int auth_failures_per_window = 20;      // failed tokens per address per 10 s; then 429
  // PEM chain; HTTPS when both files are set. TLS 1.2 and 1.3 with
  // forward-secret AEAD suites only (Mozilla's "intermediate" profile).
  std::string tls_cert_file;
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
  // `body` carries the body of stream_body routes (else null);
  // `request_id` is the session's (generated when empty); `peer` is the
  // client's address (failed-token throttling; empty: none); `client_gone`
  // becomes Request::client_gone.
  Response handle(const BeastRequest& raw, ChunkChannel* body = nullptr, std::string_view request_id = {},
                  const std::string& peer = {}, const std::atomic<bool>* client_gone = nullptr);
  // What can be refused from the header alone, before any body byte is
  // read: no route (404/405), the token and its scope (401/403/429), the
  // Content-Type of a JSON route (415). Null when the request may go on.
  // May ask the database (a token lookup): call it off the I/O threads.
  std::optional<Response> check_before_body(const http::request_header<>& head, const std::string& peer);
  // The options of the route a request line goes to (defaults when none),
  // read before the body: its limit and whether it is streamed.
  RouteOptions route_options_for(http::verb method, std::string_view target) const;

  struct Impl;  // sessions live in server.cc and reach the server through it

 private:
  // Token and scope, the Content-Type of a JSON route, then the handler.
  Response authorize_and_call(const Route& route, Request& req, const std::string& peer);
  // Token and scope (and the failed-token throttle); null when allowed.
  std::optional<Response> authorize(const Route& route, std::string_view authorization, const std::string& peer,
                                    std::optional<registry::TokenInfo>* principal);

  std::unique_ptr<Impl> impl_;
  std::atomic<bool> draining_{false};
  std::atomic<unsigned short> bound_port_{0};
};

}  // namespace tcl::api
