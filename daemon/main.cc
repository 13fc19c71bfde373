// tcld — the TCL daemon: serve, migrate, token management.
// Wiring only: each part is built here and handed to the next by reference.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <iostream>
#include <thread>

#include <unistd.h>

#include "api/auth.h"
#include "api/handlers/health.h"
#include "api/handlers/inference_v2.h"
#include "api/handlers/jobs.h"
#include "api/handlers/models.h"
#include "api/handlers/platforms.h"
#include "api/handlers/predict.h"
#include "api/handlers/sample_requests.h"
#include "api/handlers/tuning_runs.h"
#include "api/handlers/ui.h"
#include "api/handlers/uploads.h"
#include "api/http_metrics.h"
#include "api/metrics.h"
#include "api/model_cache.h"
#include "api/openapi.h"
#include "api/router.h"
#include "api/server.h"
#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "daemon/config.h"
#include "daemon/gauge_refresher.h"
#include "daemon/job_worker.h"
#include "daemon/onboarding_metrics.h"
#include "registry/alias_listener.h"
#include "registry/job_queue.h"
#include "registry/migrations.h"
#include "registry/model_store.h"
#include "registry/pg_pool.h"
#include "registry/platform_store.h"
#include "registry/sample_store.h"
#include "registry/token_store.h"
#include "registry/tuning_run_store.h"
#include "registry/upload_store.h"

extern char** environ;

namespace tcl::daemon {
namespace {

// The database's readiness in our own words; PostgreSQL's text (host, port,
// its message) only in the log line of the failed probe.
api::ReadinessCheck database_check(const Status& ping) {
  return {"database", ping.is_ok(), ping ? "" : "tcld cannot reach its database", ping.message()};
}

registry::PgPoolOptions pool_options(const Config& c) {
  return registry::PgPoolOptions{c.database_url, c.db_pool_size, std::chrono::milliseconds(5000)};
}

// Applies migrations, retrying while the database is still coming up (a
// compose stack starts tcld and PostgreSQL together).
Status migrate_with_retry(registry::PgPool& pool, std::chrono::seconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  for (int attempt = 1;; ++attempt) {
    auto report = registry::apply_migrations(pool, registry::embedded_migrations());
    if (report) {
      spdlog::info("migrations: applied={} current={}", report->applied, report->current);
      return Status::ok();
    }
    if (report.status().code() != StatusCode::kUnavailable || std::chrono::steady_clock::now() >= deadline) {
      return report.status();
    }
    spdlog::warn("migrations: database unavailable (attempt {}): {}; retrying", attempt, report.status().message());
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

int run_migrate(const Config& c) {
  registry::PgPool pool(pool_options(c));
  auto report = registry::apply_migrations(pool, registry::embedded_migrations());
  if (!report) {
    spdlog::error("migrate failed: {}", report.status().to_string());
    return 1;
  }
  std::printf("applied %d migration(s); schema is at %d\n", report->applied, report->current);
  return 0;
}

int run_token(const Config& c) {
  const std::string action = c.args.empty() ? "" : c.args[0];
  if ((action != "create" && action != "revoke") || c.token_name.empty()) {
    std::fprintf(stderr, "usage: tcld token create --name N --scope read|write|admin | tcld token revoke --name N\n");
    return 2;
  }
  registry::PgPool pool(pool_options(c));
  if (Status s = migrate_with_retry(pool, std::chrono::seconds(0)); !s) {
    spdlog::error("token: {}", s.to_string());
    return 1;
  }
  registry::TokenStore tokens(pool);
  if (action == "revoke") {
    if (Status s = tokens.revoke(c.token_name); !s) {
      std::fprintf(stderr, "tcld: %s\n", s.to_string().c_str());
      return 1;
    }
    std::fprintf(stderr, "revoked token '%s'\n", c.token_name.c_str());
    return 0;
  }
  auto scope = registry::parse_scope(c.token_scope);
  if (!scope) {
    std::fprintf(stderr, "tcld: --scope must be read, write or admin\n");
    return 2;
  }
  auto created = tokens.create(c.token_name, *scope);
  if (!created) {
    std::fprintf(stderr, "tcld: %s\n", created.status().to_string().c_str());
    return 1;
  }
  std::printf("%s\n", created->plaintext.c_str());  // the only time it is shown
  std::fprintf(stderr, "created %s token '%s'; store it now, it is not shown again\n",
               std::string(registry::scope_name(*scope)).c_str(), c.token_name.c_str());
  return 0;
}

JobWorkerOptions worker_options(const Config& c, int threads) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  JobWorkerOptions o;
  o.worker_id = std::string(host) + ":" + std::to_string(::getpid());
  o.threads = threads;
  o.torch_threads = c.train_threads;
  o.train_device = *trainer::parse_device(c.train_device);  // checked by parse_config
  o.lease = c.job_lease;
  o.metrics_names = c.metrics_names;
  return o;
}

// Waits for SIGINT/SIGTERM on a small loop of its own and calls `on_signal`.
class SignalWaiter {
 public:
  explicit SignalWaiter(std::function<void()> on_signal) : signals_(ioc_, SIGINT, SIGTERM) {
    signals_.async_wait([on_signal = std::move(on_signal)](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      spdlog::info("signal {}: shutting down", sig);
      on_signal();
    });
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~SignalWaiter() {
    signals_.cancel();
    ioc_.stop();
    thread_.join();
  }

 private:
  boost::asio::io_context ioc_;
  boost::asio::signal_set signals_;
  std::thread thread_;
};

void register_build_info(prometheus::Registry& metrics) {
  api::gauge_family(metrics, "tcld_build_info", "Always 1; the labels say which build is running.")
      .Add({{"version", TCL_VERSION}})
      .Set(1);
}

int run_worker(const Config& c) {
  prometheus::Registry metrics;
  register_build_info(metrics);
  registry::PgPool pool(pool_options(c));
  if (Status s = migrate_with_retry(pool, std::chrono::seconds(60)); !s) {
    spdlog::error("start-up stopped: {}", s.to_string());
    return 1;
  }
  registry::PlatformStore platforms(pool);
  registry::UploadStore uploads(pool);
  registry::JobQueue jobs(pool);
  registry::ModelStore models(pool);
  JobWorker worker(worker_options(c, std::max(1, c.train_workers)), jobs, platforms, uploads, models, metrics);
  // With --metrics-listen, /metrics (training progress lives in this
  // process) and health on a small server of its own; no token routes.
  api::Router router;
  api::HttpMetrics http_metrics(metrics);
  std::unique_ptr<api::Server> server;
  if (!c.metrics_listen.empty()) {
    api::HealthDeps health;
    health.readiness = [&pool] { return std::vector<api::ReadinessCheck>{database_check(pool.ping())}; };
    health.metric_registries = {&metrics};
    api::add_health_routes(router, std::move(health));
    api::ServerOptions so;
    so.host = c.metrics_listen.substr(0, c.metrics_listen.rfind(':'));
    so.port = static_cast<unsigned short>(std::stoul(c.metrics_listen.substr(c.metrics_listen.rfind(':') + 1)));
    so.io_threads = 1;
    so.worker_threads = 1;
    so.shutdown_grace = std::chrono::milliseconds(1000);
    server = std::make_unique<api::Server>(
        so, router,
        [](std::string_view) -> Result<registry::TokenInfo> {
          return Status::unauthenticated("the worker's metrics server takes no tokens");
        },
        http_metrics);
    if (Status s = server->start(); !s) {
      spdlog::error("start-up stopped: {}", s.to_string());
      return 1;
    }
    spdlog::info("worker: /metrics on {}:{}", so.host, server->port());
  }
  struct Stopping {
    core::Mutex mu;
    core::CondVar cv;
    bool stop GUARDED_BY(mu) = false;
  } stopping;
  SignalWaiter signals([&] {
    if (server) server->shutdown();
    core::MutexLock lock(stopping.mu);
    stopping.stop = true;
    stopping.cv.notify_all();
  });
  worker.start();
  spdlog::info("worker: running {} job thread(s)", std::max(1, c.train_workers));
  if (server) server->run();  // until the signal has drained it
  core::MutexLock lock(stopping.mu);
  while (!stopping.stop) stopping.cv.wait(stopping.mu);
  worker.stop();
  spdlog::info("worker stopped");
  return 0;
}

// The API server's limits and listener, from the daemon's flags.
api::ServerOptions server_options(const Config& c) {
  api::ServerOptions so;
  so.host = c.host();
  so.port = c.port();
  so.io_threads = c.io_threads;
  so.worker_threads = c.worker_threads;
  so.default_body_limit = c.body_limit;
  so.read_timeout = c.read_timeout;
  so.write_timeout = c.write_timeout;
  so.idle_timeout = c.idle_timeout;
  so.max_streams = c.max_streams;
  so.max_streams_per_client = c.max_streams_per_client;
  so.max_connections = c.max_connections;
  so.max_connections_per_address = c.max_connections_per_address;
  so.auth_failures_per_window = c.auth_failures_per_window;
  so.probe_threads = kProbeThreads;
  so.min_request_body_rate = c.min_request_body_rate;
  so.min_response_rate = c.min_response_rate;
  so.min_rate_grace = c.min_rate_grace;
  so.shutdown_grace = c.shutdown_grace;
  so.tls_cert_file = c.tls_cert;
  so.tls_key_file = c.tls_key;
  return so;
}

// /readyz: accepting, the database, its schema, the production model.
std::vector<api::ReadinessCheck> readiness_checks(registry::PgPool& pool, const api::Server& server,
                                                  const api::ModelCache& model_cache) {
  std::vector<api::ReadinessCheck> checks;
  checks.push_back({"accepting", !server.draining(), server.draining() ? "shutting down" : "", ""});
  Status db = pool.ping();
  checks.push_back(database_check(db));
  // With the database down the schema is unknown, not wrong: say so (issue 45 finding 17).
  Status mig =
      db ? registry::check_migrations(pool, registry::embedded_migrations()) : Status::unavailable("database down");
  const char* why = mig ? "" : db ? "the database schema is not this build's" : "not checked: the database is down";
  checks.push_back({"migrations", mig.is_ok(), why, mig.message()});
  const bool model_ok = model_cache.production_ready();
  checks.push_back({"model", model_ok, model_ok ? "" : "the production model version is not loaded", ""});
  return checks;
}

api::UploadRouteOptions upload_route_options(const Config& c) {
  api::UploadRouteOptions o;
  o.max_upload_bytes = c.max_upload_bytes;
  o.inflate.max_bytes_out = c.max_upload_inflated_bytes;
  o.inflate.max_ratio = c.max_upload_inflation_ratio;
  return o;
}

// Alias moves from any replica or tclctl arrive by NOTIFY; the model cache
// reloads here, off the request path, until `stopping`.
void follow_aliases(const Config& c, api::ModelCache& model_cache, const std::atomic<bool>& stopping) {
  registry::AliasListener listener(
      {.url = c.database_url}, [&](const registry::AliasChange& change) { model_cache.on_alias_change(change); },
      [&] {
        if (Status s = model_cache.resync(); !s) spdlog::warn("model_cache: resync failed: {}", s.to_string());
      });
  while (!stopping) (void)listener.wait(std::chrono::milliseconds(500));
}

int run_serve(const Config& c) {
  prometheus::Registry metrics;
  register_build_info(metrics);
  auto& pool_gauges = api::gauge_family(metrics, "tcld_db_pool_connections",
                                        "PostgreSQL pool connections by state (max, open, in_use, waiting callers).");
  auto& pool_max = pool_gauges.Add({{"state", "max"}});
  auto& pool_open = pool_gauges.Add({{"state", "open"}});
  auto& pool_in_use = pool_gauges.Add({{"state", "in_use"}});
  auto& pool_waiting = pool_gauges.Add({{"state", "waiting"}});
  auto& job_gauges = api::gauge_family(
      metrics, "tcld_jobs", "Training and distillation jobs by state (all replicas: read from the database).");

  registry::PgPool pool(pool_options(c));
  if (Status s = migrate_with_retry(pool, std::chrono::seconds(60)); !s) {
    spdlog::error("start-up stopped: {}", s.to_string());
    return 1;
  }
  registry::PlatformStore platforms(pool);
  registry::TokenStore tokens(pool);
  registry::UploadStore uploads(pool);
  registry::JobQueue jobs(pool);
  registry::ModelStore models(pool);
  registry::SampleStore samples(pool);
  registry::TuningRunStore tuning_runs(pool);
  OnboardingGauges onboarding(metrics, samples, c.metrics_names);
  api::ModelCache model_cache(models,
                              api::ModelCacheOptions{c.predict_threads, static_cast<std::size_t>(c.max_loaded_models)});
  if (Status s = model_cache.resync(); !s) spdlog::warn("model_cache: aliases not loaded yet: {}", s.to_string());
  auto& alias_gauges = api::gauge_family(metrics, "tcld_model_alias_version",
                                         "The model version each alias points at, as this replica serves it.");
  api::TokenCache token_cache([&tokens](std::string_view t) { return tokens.lookup(t); }, c.token_cache_ttl,
                              std::chrono::seconds(1), api::TokenCache::Clock::now, c.token_cache_stale);
  api::gauge(metrics, "tcld_token_cache_ttl_seconds",
             "How long a checked token is trusted before the database is asked again: a revoked token works this long.")
      .Set(std::chrono::duration<double>(c.token_cache_ttl).count());

  api::Router router;
  api::HttpMetrics http_metrics(metrics);
  api::Server server(
      server_options(c), router, [&token_cache](std::string_view t) { return token_cache.authenticate(t); },
      http_metrics);

  api::HealthDeps health;
  health.readiness = [&pool, &server, &model_cache] { return readiness_checks(pool, server, model_cache); };
  health.metric_registries = {&metrics};
  health.before_scrape = [&] {
    const registry::PgPoolStats st = pool.stats();
    pool_max.Set(st.size);
    pool_open.Set(st.open);
    pool_in_use.Set(st.in_use);
    pool_waiting.Set(st.waiting);
    for (const auto& [alias, version] : model_cache.aliases()) {
      alias_gauges.Add({{"alias", api::name_label(alias, c.metrics_names)}}).Set(static_cast<double>(version));
    }
  };
  // The gauges read from the database, on a timer: a scrape reads memory only.
  GaugeRefresher sql_gauges(c.metrics_refresh, [&jobs, &job_gauges, &onboarding] {
    if (auto counts = jobs.counts_by_state(); counts) {
      for (const auto& jc : *counts) {
        job_gauges.Add({{"state", std::string(registry::job_state_name(jc.state))}}).Set(static_cast<double>(jc.count));
      }
    }
    onboarding.refresh();
  });
  health.openapi_yaml = api::kOpenApiYaml;
  api::add_inference_v2_routes(router, platforms, models, model_cache, metrics, {.readiness = health.readiness});
  api::add_health_routes(router, std::move(health));
  api::add_platform_routes(router, platforms);
  api::add_upload_routes(router, platforms, uploads, upload_route_options(c), metrics);
  api::add_job_routes(router, platforms, jobs);
  api::add_model_routes(router, models);
  api::add_tuning_run_routes(router, platforms, tuning_runs);
  api::add_predict_routes(router, platforms, model_cache, metrics);
  api::add_sample_request_routes(router, platforms, uploads, samples, model_cache, metrics,
                                 {.max_concurrent = c.max_sample_requests});
  api::add_ui_routes(router);  // the web console (ui/): static files; its data comes from the routes above

  if (Status s = server.start(); !s) {
    spdlog::error("start-up stopped: {}", s.to_string());
    return 1;
  }

  std::unique_ptr<JobWorker> worker;
  if (c.train_workers > 0) {
    worker = std::make_unique<JobWorker>(worker_options(c, c.train_workers), jobs, platforms, uploads, models, metrics);
    worker->start();
  }
  std::atomic<bool> stopping{false};
  std::thread alias_thread([&] { follow_aliases(c, model_cache, stopping); });
  {
    // Signals on their own small loop, so a busy I/O pool cannot delay them.
    SignalWaiter signals([&server] { server.shutdown(); });
    server.run();
  }
  stopping = true;
  alias_thread.join();
  if (worker) worker->stop();
  spdlog::info("tcld stopped");
  return 0;
}

}  // namespace
}  // namespace tcl::daemon

int main(int argc, char** argv) {
  using namespace tcl::daemon;
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  std::string help;
  auto config = parse_config(argc, argv, env, &help);
  if (!help.empty()) {
    std::cout << help;
    return 0;
  }
  if (!config) {
    std::fprintf(stderr, "tcld: %s\n\n%s", config.status().message().c_str(), usage().c_str());
    return 2;
  }
  // Logs go to stderr: stdout carries command output (a new token).
  spdlog::set_default_logger(spdlog::stderr_logger_mt("tcld"));
  spdlog::set_level(spdlog::level::from_str(config->log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%eZ level=%l %v", spdlog::pattern_time_type::utc);
  try {
    if (config->command == "migrate") return run_migrate(*config);
    if (config->command == "token") return run_token(*config);
    if (config->command == "serve") return run_serve(*config);
    if (config->command == "worker") return run_worker(*config);
    std::fprintf(stderr, "tcld: '%s' is not available yet\n", config->command.c_str());
    return 2;
  } catch (const std::exception& e) {
    spdlog::critical("fatal: {}", e.what());
    return 1;
  }
}
