#include "daemon/gauge_refresher.h"

#include <utility>

namespace tcl::daemon {

GaugeRefresher::GaugeRefresher(std::chrono::milliseconds period, std::function<void()> refresh)
    : period_(period), refresh_(std::move(refresh)), thread_([this] { loop(); }) {}

GaugeRefresher::~GaugeRefresher() {
  {
    core::MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GaugeRefresher::loop() {
  for (;;) {
    refresh_();  // unlocked: a refresh that blocks must not hold up the destructor
    core::MutexLock lock(mu_);
    const auto next = std::chrono::steady_clock::now() + period_;
    while (!stop_ && std::chrono::steady_clock::now() < next) (void)cv_.wait_until(mu_, next);
    if (stop_) return;
  }
}

}  // namespace tcl::daemon
