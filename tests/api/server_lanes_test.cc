// The server's lanes over a real socket (issue 45, finding 7): with every
// thread of the metrics lane held by a handler that does not return,
// readiness (the probe lane) still answers. Before, /metrics ran on the
// probe lane, so a scrape flood held the threads readiness needed.
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "api/http_metrics.h"
#include "api/router.h"
#include "api/server.h"
#include "tests/lib/http_client.h"

namespace tcl::api {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::HttpResult;

TEST(ServerLanesTest, ReadinessAnswersWhileTheMetricsLaneIsFull) {
  std::atomic<int> scraping{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  Router router;
  RouteOptions scrape{Access::kOpen, std::size_t{0}};
  scrape.lane = Lane::kMetrics;
  router.add(
      http::verb::get, "/metrics",
      [&](const Request&) {
        ++scraping;
        released.wait();  // a scrape that does not end until the test says so
        return Response{};
      },
      scrape);
  RouteOptions probe{Access::kOpen, std::size_t{0}};
  probe.lane = Lane::kProbe;
  router.add(
      http::verb::get, "/readyz", [](const Request&) { return Response{}; }, probe);

  prometheus::Registry registry;
  HttpMetrics metrics(registry);
  ServerOptions options;
  options.port = 0;
  options.probe_threads = 1;
  options.metrics_threads = 1;
  options.shutdown_grace = 5000ms;
  Server server(
      options, router, [](std::string_view) -> Result<registry::TokenInfo> { return Status::unauthenticated("none"); },
      metrics);
  ASSERT_TRUE(server.start().is_ok());
  std::thread serving([&] { server.run(); });

  // The blocking client cannot time out by itself: each call runs in a
  // future, judged by a deadline.
  const int port = server.port();
  std::vector<std::future<HttpResult>> scrapes;
  for (int i = 0; i < 3; ++i) {
    scrapes.push_back(std::async(std::launch::async, [port] { return testing::http_get(port, "/metrics"); }));
  }
  for (const auto until = Clock::now() + 10s; scraping.load() == 0 && Clock::now() < until;) {
    std::this_thread::sleep_for(10ms);
  }
  auto ready = std::async(std::launch::async, [port] { return testing::http_get(port, "/readyz"); });
  const bool answered = ready.wait_for(10s) == std::future_status::ready;
  release.set_value();  // every scrape ends; then the server stops
  for (auto& f : scrapes) EXPECT_EQ(f.get().status, 200);
  const int ready_status = ready.get().status;
  server.shutdown();
  serving.join();
  EXPECT_EQ(scraping.load(), 3);
  EXPECT_TRUE(answered) << "readiness queued behind the scrapes";
  EXPECT_EQ(ready_status, 200);
}

}  // namespace
}  // namespace tcl::api
