#include "tuner/scheduler.h"

#include <cmath>
#include <string>

namespace tcl::tuner {
namespace {

constexpr double kAlpha = 0.2;      // Ansor's alpha
constexpr std::size_t kWindow = 3;  // Ansor's backward_window_size
constexpr std::size_t kFailedRoundsBeforeGivingUp = 3;

}  // namespace

Result<SchedulerRule> scheduler_rule(std::string_view name) {
  if (name == "gradient") return SchedulerRule::kGradient;
  if (name == "round-robin") return SchedulerRule::kRoundRobin;
  return Status::invalid_argument("unknown scheduler '" + std::string(name) + "' (gradient, round-robin)");
}

std::string_view scheduler_rule_name(SchedulerRule rule) {
  return rule == SchedulerRule::kGradient ? "gradient" : "round-robin";
}

TaskScheduler::TaskScheduler(SchedulerRule rule, std::vector<int> weights)
    : rule_(rule), weights_(std::move(weights)), history_(weights_.size()), exhausted_(weights_.size(), false) {}

void TaskScheduler::record(std::size_t task, double best) {
  history_[task].push_back(best);
  ++total_rounds_;
}

double TaskScheduler::expected_gain(std::size_t task) const {
  const std::vector<double>& h = history_[task];
  const double best = h.back();
  // No valid program yet: first, for a few rounds; then it stops taking rounds.
  if (!std::isfinite(best)) return h.size() < kFailedRoundsBeforeGivingUp ? INFINITY : 0.0;
  const std::size_t t = h.size();
  const double backward = t > kWindow ? (best - h[t - 1 - kWindow]) / static_cast<double>(kWindow) : 0.0;
  const double forward = -best / static_cast<double>(t);
  return weights_[task] * -(kAlpha * backward + (1 - kAlpha) * forward);
}

std::size_t TaskScheduler::next() const {
  const std::size_t n = history_.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (history_[i].empty() && !exhausted_[i]) return i;  // warm-up: one round each
  }
  if (rule_ == SchedulerRule::kRoundRobin) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = (total_rounds_ + k) % n;
      if (!exhausted_[i]) return i;
    }
    return kNone;
  }
  std::size_t pick = kNone;
  double most = -INFINITY;
  for (std::size_t i = 0; i < n; ++i) {
    if (exhausted_[i]) continue;
    const double g = expected_gain(i);
    if (g > most) most = g, pick = i;
  }
  return pick;
}

}  // namespace tcl::tuner
