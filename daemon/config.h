// daemon/config.h — tcld's configuration: flags, then TCLD_* environment
// variables, then defaults (a flag beats the environment). Every option has
// an environment twin named TCLD_ + the flag in upper case with '-' → '_':
// --database-url ↔ TCLD_DATABASE_URL.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/byte_stream.h"
#include "core/status.h"

namespace tcl::daemon {

// Threads answering readiness (api::ServerOptions::probe_threads).
inline constexpr int kProbeThreads = 2;
// Database connections of the thread that refreshes /metrics' SQL-backed
// gauges (daemon/gauge_refresher.h).
inline constexpr int kMetricsRefreshConnections = 1;

struct Config {
  std::string command;            // serve | migrate | token | worker
  std::vector<std::string> args;  // what follows the command (token create ...)

  std::string database_url = "postgresql://postgres@127.0.0.1:5432/tcl";
  std::string listen = "127.0.0.1:8080";  // host:port
  std::string tls_cert;                   // HTTPS when both are set
  std::string tls_key;
  int io_threads = 2;
  int worker_threads = 4;
  int db_pool_size = 16;                      // >= max_streams + worker_threads + probes + train_workers
  std::size_t body_limit = 1 << 20;           // default per-request body limit, bytes
  std::size_t max_upload_bytes = 1ull << 30;  // upload routes' body limit, bytes
  // A gzip upload inflating past either is refused (413). Real TVM logs
  // inflate 16-46 times to 540 MB at most (core/byte_stream.h).
  std::uint64_t max_upload_inflated_bytes = core::InflateLimits{}.max_bytes_out;  // 4 GiB
  double max_upload_inflation_ratio = core::InflateLimits{}.max_ratio;            // 200
  std::chrono::milliseconds read_timeout{30000};
  std::chrono::milliseconds write_timeout{30000};
  std::chrono::milliseconds idle_timeout{60000};
  int max_streams = 8;                      // streamed uploads/downloads at once; more get 503
  int max_streams_per_client = 4;           // of those, per token (or tokenless address)
  int max_connections = 0;                  // 0 = what the open-file limit allows (api/admission.h)
  int max_connections_per_address = 256;    // 0 = no cap
  int auth_failures_per_window = 20;        // bad tokens per address per 10 s, then 429
  std::size_t min_request_body_rate = 240;  // bytes/s after the grace (Kestrel's default); 0 = off
  std::size_t min_response_rate = 240;      // bytes/s after the grace; 0 = off
  std::chrono::milliseconds min_rate_grace{5000};
  std::chrono::milliseconds shutdown_grace{20000};
  std::chrono::milliseconds token_cache_ttl{5000};
  // A known token's last good answer serves this long past its ttl while the
  // database is down (api/auth.h); 0 = a database outage is a 503 at once.
  std::chrono::milliseconds token_cache_stale{300000};
  int train_workers = 1;              // job threads in `serve` (0 = none); `worker` runs these only
  int train_threads = 0;              // torch threads per job; 0 = all cores
  std::string train_device = "auto";  // auto|cpu|cuda (trainer/device.h)
  std::chrono::milliseconds job_lease{60000};
  std::string metrics_listen;  // worker: host:port serving /metrics ("" = none)
  // /metrics' SQL-backed gauges (jobs, onboarding) are read this often, never per scrape.
  std::chrono::milliseconds metrics_refresh{5000};
  bool metrics_names = false;      // platform and alias names as label values on /metrics (else hashed)
  int max_sample_requests = 1;     // POST sample-requests computed at once; more get 503 (< worker_threads)
  int predict_threads = 0;         // fast-path threads per predict request; 0 = all cores
  int max_loaded_models = 8;       // model versions kept in memory for predict
  std::string log_level = "info";  // trace|debug|info|warn|error

  // Subcommand options (token create/revoke).
  std::string token_name;
  std::string token_scope = "read";

  std::string host() const;     // from listen
  unsigned short port() const;  // from listen
};

// Parses argv and `env` (a list of "NAME=value", usually environ). Returns
// kInvalidArgument naming the flag or variable on bad input; `help` is set to
// the usage text when --help was asked for.
Result<Config> parse_config(int argc, const char* const* argv, const std::vector<std::string>& env, std::string* help);

std::string usage();

}  // namespace tcl::daemon
