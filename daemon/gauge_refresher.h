// daemon/gauge_refresher.h — runs a refresh function on a thread of its own:
// once at construction, then every `period` until destroyed. The gauges it
// sets are what /metrics serves, so a scrape reads memory only and never
// runs SQL (issue 45, finding 7: a scrape flood ran one query per scrape).
// A refresh that blocks (a locked table, a database down) delays only the
// next refresh; scrapes keep answering the last values.
//
// Thread-safe to construct and destroy from one thread; `refresh` runs on the
// refresher's thread only and must outlive nothing (it is owned here).
// Destruction waits for a refresh in progress to return.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

#include "core/mutex.h"

namespace tcl::daemon {

class GaugeRefresher {
 public:
  GaugeRefresher(std::chrono::milliseconds period, std::function<void()> refresh);
  ~GaugeRefresher();
  GaugeRefresher(const GaugeRefresher&) = delete;
  GaugeRefresher& operator=(const GaugeRefresher&) = delete;

 private:
  void loop();

  const std::chrono::milliseconds period_;
  const std::function<void()> refresh_;
  core::Mutex mu_;
  core::CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tcl::daemon
