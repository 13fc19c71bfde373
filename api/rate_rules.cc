#include "api/rate_rules.h"

#include <algorithm>

namespace tcl::api {
namespace {

using Clock = std::chrono::steady_clock;

// The time `bytes` take at `rate` bytes/s.
Clock::duration time_at_rate(std::uint64_t bytes, std::size_t rate) {
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(static_cast<double>(bytes) / static_cast<double>(rate)));
}

}  // namespace

RateDeadline read_deadline(const RateRule& rule, Clock::time_point now, Clock::time_point active_since,
                           std::uint64_t received) {
  RateDeadline d{now + rule.timeout, "read_timeout"};
  if (rule.min_rate == 0) return d;
  const auto allowed = active_since + std::max(rule.grace, time_at_rate(received, rule.min_rate));
  if (allowed < d.at) d = {allowed, "min_request_body_rate"};
  return d;
}

RateDeadline write_deadline(const RateRule& rule, Clock::time_point now, std::uint64_t sent, Clock::duration active,
                            std::size_t bytes) {
  if (rule.min_rate == 0) return {now + rule.timeout, "write_timeout"};
  RateDeadline d{now + std::max(rule.timeout, time_at_rate(bytes, rule.min_rate)), "write_timeout"};
  const auto allowed = now - active + std::max(rule.grace, time_at_rate(sent + bytes, rule.min_rate));
  if (allowed < d.at) d = {allowed, "min_response_rate"};
  return d;
}

}  // namespace tcl::api
