#include "daemon/config.h"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cctype>
#include <sstream>

namespace tcl::daemon {
namespace po = boost::program_options;

namespace {

// The durations as program_options reads them (whole milliseconds), copied
// into Config's chrono fields once checked.
struct Millis {
  std::int64_t read = 0, write = 0, idle = 0, grace = 0, token_ttl = 0, token_stale = 0, lease = 0, rate_grace = 0,
               metrics_refresh = 0;
};

po::options_description options(Config& c, Millis& ms) {
  po::options_description d("Options (each also read from TCLD_<NAME>, e.g. TCLD_DATABASE_URL)");
  d.add_options()("help,h", "print this help")(
      "database-url", po::value(&c.database_url)->default_value(c.database_url), "PostgreSQL URL of the registry")(
      "listen", po::value(&c.listen)->default_value(c.listen), "host:port to serve HTTP on")(
      "tls-cert", po::value(&c.tls_cert), "PEM certificate chain; serve HTTPS with --tls-key")(
      "tls-key", po::value(&c.tls_key), "PEM private key")(
      "io-threads", po::value(&c.io_threads)->default_value(c.io_threads), "threads that run sockets")(
      "worker-threads", po::value(&c.worker_threads)->default_value(c.worker_threads),
      "threads that run request handlers (SQL, inference)")(
      "db-pool-size", po::value(&c.db_pool_size)->default_value(c.db_pool_size), "max PostgreSQL connections")(
      "body-limit", po::value(&c.body_limit)->default_value(c.body_limit), "default request body limit, bytes")(
      "max-upload-bytes", po::value(&c.max_upload_bytes)->default_value(c.max_upload_bytes),
      "body limit of upload routes, bytes (as sent: compressed when gzip)")(
      "max-upload-inflated-bytes", po::value(&c.max_upload_inflated_bytes)->default_value(c.max_upload_inflated_bytes),
      "a gzip upload may inflate to this many bytes at most (413 above)")(
      "max-upload-inflation-ratio",
      po::value(&c.max_upload_inflation_ratio)->default_value(c.max_upload_inflation_ratio),
      "a gzip upload may inflate this many times its compressed size at most, judged past 1 MiB (413 above)")(
      "read-timeout-ms", po::value(&ms.read)->default_value(c.read_timeout.count()),
      "longest wait for the next bytes of a request")(
      "write-timeout-ms", po::value(&ms.write)->default_value(c.write_timeout.count()),
      "longest wait for the client to take the next bytes of an answer")(
      "idle-timeout-ms", po::value(&ms.idle)->default_value(c.idle_timeout.count()),
      "keep-alive wait for the next request (and the time to send its header)")(
      "max-streams", po::value(&c.max_streams)->default_value(c.max_streams),
      "streamed uploads and downloads served at once; more are answered 503 + Retry-After")(
      "max-streams-per-client", po::value(&c.max_streams_per_client)->default_value(c.max_streams_per_client),
      "stream slots one token (or one address without a token) may hold; more are answered 503")(
      "max-connections", po::value(&c.max_connections)->default_value(c.max_connections),
      "client connections held at once (0 = as many as the open-file limit allows, up to 10000)")(
      "max-connections-per-address",
      po::value(&c.max_connections_per_address)->default_value(c.max_connections_per_address),
      "client connections from one address at once (0 = no cap: behind a proxy)")(
      "auth-failures-per-window", po::value(&c.auth_failures_per_window)->default_value(c.auth_failures_per_window),
      "requests with a bad token one address may make per 10 s before it is answered 429 (0 = no throttle)")(
      "min-request-body-rate", po::value(&c.min_request_body_rate)->default_value(c.min_request_body_rate),
      "bytes/s a request body must average after the grace, or the connection is closed (0 = no rule)")(
      "min-response-rate", po::value(&c.min_response_rate)->default_value(c.min_response_rate),
      "bytes/s a client must take an answer at after the grace, or the connection is closed (0 = no rule)")(
      "min-rate-grace-ms", po::value(&ms.rate_grace)->default_value(c.min_rate_grace.count()),
      "how long a body or answer may run before the minimum rates apply")(
      "shutdown-grace-ms", po::value(&ms.grace)->default_value(c.shutdown_grace.count()),
      "on SIGTERM, how long in-flight requests may take")(
      "token-cache-ttl-ms", po::value(&ms.token_ttl)->default_value(c.token_cache_ttl.count()),
      "how long a checked token is trusted before asking the database again")(
      "token-cache-stale-ms", po::value(&ms.token_stale)->default_value(c.token_cache_stale.count()),
      "while the database is down, how long past its ttl a known token's last good answer still serves")(
      "train-workers", po::value(&c.train_workers)->default_value(c.train_workers),
      "training jobs run at once by this process (serve: 0 leaves training to `tcld worker`)")(
      "train-threads", po::value(&c.train_threads)->default_value(c.train_threads),
      "torch threads per training job (0 = all cores)")(
      "train-device", po::value(&c.train_device)->default_value(c.train_device),
      "where training jobs run: auto (CUDA when a GPU is usable, else the CPU), cpu or cuda")(
      "job-lease-ms", po::value(&ms.lease)->default_value(c.job_lease.count()),
      "a claimed job's lease; a worker that stops heartbeating loses the job after this")(
      "metrics-listen", po::value(&c.metrics_listen),
      "worker: host:port to serve /metrics, /healthz and /readyz on (default: none)")(
      "metrics-refresh-ms", po::value(&ms.metrics_refresh)->default_value(c.metrics_refresh.count()),
      "how often /metrics' database-backed gauges (jobs, onboarding) are read; a scrape never runs SQL")(
      "metrics-names", po::value(&c.metrics_names)->default_value(c.metrics_names)->implicit_value(true),
      "show platform and alias names as label values on /metrics (open to anyone); else a hash of each")(
      "max-sample-requests", po::value(&c.max_sample_requests)->default_value(c.max_sample_requests),
      "sample requests (POST .../sample-requests) computed at once; more are answered 503 + Retry-After")(
      "predict-threads", po::value(&c.predict_threads)->default_value(c.predict_threads),
      "threads scoring one predict request (0 = all cores)")(
      "max-loaded-models", po::value(&c.max_loaded_models)->default_value(c.max_loaded_models),
      "models kept in memory for predict: a version's trunk and each adapted platform's model count one each "
      "(aliased versions' always stay)")("log-level", po::value(&c.log_level)->default_value(c.log_level),
                                         "trace|debug|info|warn|error")("name", po::value(&c.token_name),
                                                                        "token create/revoke: the token's name")(
      "scope", po::value(&c.token_scope)->default_value(c.token_scope), "token create: read|write|admin");
  return d;
}

constexpr const char* kCommands =
    "Usage: tcld COMMAND [options]\n"
    "Commands:\n"
    "  serve                               apply migrations, then serve the HTTP API\n"
    "  migrate                             apply pending migrations and exit\n"
    "  token create --name N --scope S     create an API token (printed once)\n"
    "  token revoke --name N               revoke a token\n"
    "  worker                              run training jobs only (HTTP only for --metrics-listen)\n";

}  // namespace

std::string usage() {
  Config c;
  Millis ms;
  std::ostringstream out;
  out << kCommands << "\n" << options(c, ms);
  return out.str();
}

std::string Config::host() const { return listen.substr(0, listen.rfind(':')); }

unsigned short Config::port() const {
  return static_cast<unsigned short>(std::stoul(listen.substr(listen.rfind(':') + 1)));
}

namespace {

// The numeric limits of `c` checked against each other, and the durations
// copied from `ms` into `c`.
Status check_limits(Config& c, const Millis& ms) {
  if (c.io_threads < 1 || c.worker_threads < 1 || c.db_pool_size < 1) {
    return Status::invalid_argument("--io-threads, --worker-threads and --db-pool-size must be >= 1");
  }
  if (c.tls_cert.empty() != c.tls_key.empty()) {
    return Status::invalid_argument("--tls-cert and --tls-key go together");
  }
  if (c.train_workers < 0 || c.train_threads < 0) {
    return Status::invalid_argument("--train-workers and --train-threads must be >= 0");
  }
  if (c.max_upload_inflated_bytes < 1 || !(c.max_upload_inflation_ratio >= 1)) {
    return Status::invalid_argument("--max-upload-inflated-bytes must be >= 1 and --max-upload-inflation-ratio >= 1");
  }
  if (c.train_device != "auto" && c.train_device != "cpu" && c.train_device != "cuda") {
    return Status::invalid_argument("--train-device must be auto, cpu or cuda");
  }
  if (c.predict_threads < 0 || c.max_loaded_models < 1) {
    return Status::invalid_argument("--predict-threads must be >= 0 and --max-loaded-models >= 1");
  }
  if (ms.lease < 1000) return Status::invalid_argument("--job-lease-ms must be at least 1000");
  if (ms.metrics_refresh < 10) return Status::invalid_argument("--metrics-refresh-ms must be at least 10");
  c.metrics_refresh = std::chrono::milliseconds(ms.metrics_refresh);
  // The cap keeps worker threads free for every other route.
  if (c.max_sample_requests < 1 || (c.command == "serve" && c.max_sample_requests >= c.worker_threads)) {
    return Status::invalid_argument("--max-sample-requests must be >= 1 and below --worker-threads");
  }
  c.job_lease = std::chrono::milliseconds(ms.lease);
  if (ms.read <= 0 || ms.write <= 0 || ms.idle <= 0 || ms.grace < 0 || ms.token_ttl < 0 || ms.token_stale < 0 ||
      ms.rate_grace < 0) {
    return Status::invalid_argument("timeouts must be positive");
  }
  if (c.max_streams < 1) return Status::invalid_argument("--max-streams must be >= 1");
  if (c.max_streams_per_client < 1 || c.max_connections < 0 || c.max_connections_per_address < 0 ||
      c.auth_failures_per_window < 0) {
    return Status::invalid_argument(
        "--max-streams-per-client must be >= 1; --max-connections, --max-connections-per-address and "
        "--auth-failures-per-window >= 0");
  }
  // An upload or download that waits on a slow client holds a database
  // connection all along; the pool must still serve every other thread.
  if (const int needed =
          c.max_streams + c.worker_threads + kProbeThreads + kMetricsRefreshConnections + c.train_workers;
      c.command == "serve" && c.db_pool_size < needed) {
    return Status::invalid_argument(
        "--db-pool-size " + std::to_string(c.db_pool_size) + " is too small: streams (" +
        std::to_string(c.max_streams) + ") + worker threads (" + std::to_string(c.worker_threads) + ") + probes (" +
        std::to_string(kProbeThreads) + ") + metrics refresh (" + std::to_string(kMetricsRefreshConnections) +
        ") + train workers (" + std::to_string(c.train_workers) + ") need " + std::to_string(needed));
  }
  c.read_timeout = std::chrono::milliseconds(ms.read);
  c.write_timeout = std::chrono::milliseconds(ms.write);
  c.idle_timeout = std::chrono::milliseconds(ms.idle);
  c.shutdown_grace = std::chrono::milliseconds(ms.grace);
  c.token_cache_ttl = std::chrono::milliseconds(ms.token_ttl);
  c.token_cache_stale = std::chrono::milliseconds(ms.token_stale);
  c.min_rate_grace = std::chrono::milliseconds(ms.rate_grace);
  return Status::ok();
}

}  // namespace

Result<Config> parse_config(int argc, const char* const* argv, const std::vector<std::string>& env, std::string* help) {
  Config c;
  Millis ms;
  po::options_description desc = options(c, ms);
  po::options_description hidden;
  hidden.add_options()("command", po::value(&c.command))("args", po::value(&c.args)->multitoken());
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description pos;
  pos.add("command", 1).add("args", -1);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    // Environment second: program_options keeps the first value stored, so
    // flags win over TCLD_* variables.
    std::vector<std::string> names;
    for (const auto& opt : desc.options()) names.push_back(opt->long_name());
    po::parsed_options from_env(&desc);
    for (const std::string& kv : env) {
      if (kv.rfind("TCLD_", 0) != 0) continue;
      const std::size_t eq = kv.find('=');
      if (eq == std::string::npos) continue;
      std::string name = kv.substr(5, eq - 5);
      for (char& ch : name) ch = ch == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (std::find(names.begin(), names.end(), name) == names.end() || name == "help") continue;
      from_env.options.emplace_back(name, std::vector<std::string>{kv.substr(eq + 1)});
    }
    po::store(from_env, vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return Status::invalid_argument(e.what());
  }
  if (vm.count("help") != 0u) {
    if (help != nullptr) *help = usage();
    return c;
  }
  if (c.command.empty()) return Status::invalid_argument("no command given; try 'tcld serve' or 'tcld --help'");
  if (c.command != "serve" && c.command != "migrate" && c.command != "token" && c.command != "worker") {
    return Status::invalid_argument("unknown command '" + c.command + "'");
  }
  const std::size_t colon = c.listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == c.listen.size()) {
    return Status::invalid_argument("--listen must be host:port, got '" + c.listen + "'");
  }
  try {
    const unsigned long port = std::stoul(c.listen.substr(colon + 1));
    if (port > 65535) throw std::out_of_range("port");
  } catch (const std::exception&) {
    return Status::invalid_argument("--listen port must be 0..65535, got '" + c.listen.substr(colon + 1) + "'");
  }
  if (!c.metrics_listen.empty()) {
    const std::size_t mc = c.metrics_listen.rfind(':');
    const std::string port = mc == std::string::npos ? "" : c.metrics_listen.substr(mc + 1);
    if (mc == std::string::npos || mc == 0 || port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string::npos || std::stoul(port) > 65535) {
      return Status::invalid_argument("--metrics-listen must be host:port, got '" + c.metrics_listen + "'");
    }
  }
  if (Status limits = check_limits(c, ms); !limits.is_ok()) return limits;
  if (c.log_level != "trace" && c.log_level != "debug" && c.log_level != "info" && c.log_level != "warn" &&
      c.log_level != "error") {
    return Status::invalid_argument("--log-level must be trace, debug, info, warn or error");
  }
  return c;
}

}  // namespace tcl::daemon
