#include "daemon/config.h"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cctype>
#include <sstream>

namespace tcl::daemon {
namespace po = boost::program_options;

namespace {

po::options_description options(Config& c, std::int64_t* read_ms, std::int64_t* write_ms, std::int64_t* idle_ms,
                                std::int64_t* grace_ms, std::int64_t* token_ttl_ms, std::int64_t* lease_ms) {
  po::options_description d("Options (each also read from TCLD_<NAME>, e.g. TCLD_DATABASE_URL)");
  d.add_options()
      ("help,h", "print this help")
      ("database-url", po::value(&c.database_url)->default_value(c.database_url), "PostgreSQL URL of the registry")
      ("listen", po::value(&c.listen)->default_value(c.listen), "host:port to serve HTTP on")
      ("tls-cert", po::value(&c.tls_cert), "PEM certificate chain; serve HTTPS with --tls-key")
      ("tls-key", po::value(&c.tls_key), "PEM private key")
      ("io-threads", po::value(&c.io_threads)->default_value(c.io_threads), "threads that run sockets")
      ("worker-threads", po::value(&c.worker_threads)->default_value(c.worker_threads),
       "threads that run request handlers (SQL, inference)")
      ("db-pool-size", po::value(&c.db_pool_size)->default_value(c.db_pool_size), "max PostgreSQL connections")
      ("body-limit", po::value(&c.body_limit)->default_value(c.body_limit), "default request body limit, bytes")
      ("max-upload-bytes", po::value(&c.max_upload_bytes)->default_value(c.max_upload_bytes),
       "body limit of upload routes, bytes")
      ("read-timeout-ms", po::value(read_ms)->default_value(c.read_timeout.count()), "time to read one request")
      ("write-timeout-ms", po::value(write_ms)->default_value(c.write_timeout.count()), "time to write one answer")
      ("idle-timeout-ms", po::value(idle_ms)->default_value(c.idle_timeout.count()),
       "keep-alive wait for the next request")
      ("shutdown-grace-ms", po::value(grace_ms)->default_value(c.shutdown_grace.count()),
       "on SIGTERM, how long in-flight requests may take")
      ("token-cache-ttl-ms", po::value(token_ttl_ms)->default_value(c.token_cache_ttl.count()),
       "how long a checked token is trusted before asking the database again")
      ("train-workers", po::value(&c.train_workers)->default_value(c.train_workers),
       "training jobs run at once by this process (serve: 0 leaves training to `tcld worker`)")
      ("train-threads", po::value(&c.train_threads)->default_value(c.train_threads),
       "torch threads per training job (0 = all cores)")
      ("train-device", po::value(&c.train_device)->default_value(c.train_device),
       "where training jobs run: auto (CUDA when a GPU is usable, else the CPU), cpu or cuda")
      ("job-lease-ms", po::value(lease_ms)->default_value(c.job_lease.count()),
       "a claimed job's lease; a worker that stops heartbeating loses the job after this")
      ("metrics-listen", po::value(&c.metrics_listen),
       "worker: host:port to serve /metrics, /healthz and /readyz on (default: none)")
      ("predict-threads", po::value(&c.predict_threads)->default_value(c.predict_threads),
       "threads scoring one predict request (0 = all cores)")
      ("max-loaded-models", po::value(&c.max_loaded_models)->default_value(c.max_loaded_models),
       "model versions kept in memory for predict (aliased ones always stay)")
      ("log-level", po::value(&c.log_level)->default_value(c.log_level), "trace|debug|info|warn|error")
      ("name", po::value(&c.token_name), "token create/revoke: the token's name")
      ("scope", po::value(&c.token_scope)->default_value(c.token_scope), "token create: read|write|admin");
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
  std::int64_t a = 0, b = 0, d = 0, e = 0, f = 0, g = 0;
  std::ostringstream out;
  out << kCommands << "\n" << options(c, &a, &b, &d, &e, &f, &g);
  return out.str();
}

std::string Config::host() const { return listen.substr(0, listen.rfind(':')); }

unsigned short Config::port() const {
  return static_cast<unsigned short>(std::stoul(listen.substr(listen.rfind(':') + 1)));
}

Result<Config> parse_config(int argc, const char* const* argv, const std::vector<std::string>& env,
                            std::string* help) {
  Config c;
  std::int64_t read_ms = 0, write_ms = 0, idle_ms = 0, grace_ms = 0, token_ttl_ms = 0, lease_ms = 0;
  po::options_description desc = options(c, &read_ms, &write_ms, &idle_ms, &grace_ms, &token_ttl_ms, &lease_ms);
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
  if (c.io_threads < 1 || c.worker_threads < 1 || c.db_pool_size < 1) {
    return Status::invalid_argument("--io-threads, --worker-threads and --db-pool-size must be >= 1");
  }
  if (c.tls_cert.empty() != c.tls_key.empty()) {
    return Status::invalid_argument("--tls-cert and --tls-key go together");
  }
  if (c.train_workers < 0 || c.train_threads < 0) {
    return Status::invalid_argument("--train-workers and --train-threads must be >= 0");
  }
  if (c.train_device != "auto" && c.train_device != "cpu" && c.train_device != "cuda") {
    return Status::invalid_argument("--train-device must be auto, cpu or cuda");
  }
  if (c.predict_threads < 0 || c.max_loaded_models < 1) {
    return Status::invalid_argument("--predict-threads must be >= 0 and --max-loaded-models >= 1");
  }
  if (lease_ms < 1000) return Status::invalid_argument("--job-lease-ms must be at least 1000");
  c.job_lease = std::chrono::milliseconds(lease_ms);
  if (read_ms <= 0 || write_ms <= 0 || idle_ms <= 0 || grace_ms < 0 || token_ttl_ms < 0) {
    return Status::invalid_argument("timeouts must be positive");
  }
  c.read_timeout = std::chrono::milliseconds(read_ms);
  c.write_timeout = std::chrono::milliseconds(write_ms);
  c.idle_timeout = std::chrono::milliseconds(idle_ms);
  c.shutdown_grace = std::chrono::milliseconds(grace_ms);
  c.token_cache_ttl = std::chrono::milliseconds(token_ttl_ms);
  if (c.log_level != "trace" && c.log_level != "debug" && c.log_level != "info" && c.log_level != "warn" &&
      c.log_level != "error") {
    return Status::invalid_argument("--log-level must be trace, debug, info, warn or error");
  }
  return c;
}

}  // namespace tcl::daemon
