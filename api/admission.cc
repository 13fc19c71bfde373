#include "api/admission.h"

#include <sys/resource.h>

#include <algorithm>

namespace tcl::api {

Admission::Ticket::~Ticket() { a_.release(counts_, key_); }

void Admission::release(std::map<std::string, int>* counts, const std::string& key) {
  core::MutexLock lock(mu_);
  if (counts == &per_address_) --connections_;
  if (!key.empty()) {
    auto it = counts->find(key);
    if (it != counts->end() && --it->second <= 0) counts->erase(it);
  }
}

std::unique_ptr<Admission::Ticket> Admission::admit_connection(const std::string& address, Refusal* why) {
  core::MutexLock lock(mu_);
  *why = Refusal::kNone;
  if (connections_ >= limits_.max_connections) {
    *why = Refusal::kTotal;
    return nullptr;
  }
  std::string key;
  if (limits_.max_connections_per_address > 0) {
    int& n = per_address_[address];
    if (n >= limits_.max_connections_per_address) {
      *why = Refusal::kPerAddress;
      return nullptr;
    }
    ++n;
    key = address;
  }
  ++connections_;
  return std::unique_ptr<Ticket>(new Ticket(*this, &per_address_, std::move(key)));
}

std::unique_ptr<Admission::Ticket> Admission::admit_stream(const std::string& client) {
  core::MutexLock lock(mu_);
  int& n = per_client_streams_[client];
  if (n >= limits_.max_streams_per_client) {
    if (n == 0) per_client_streams_.erase(client);
    return nullptr;
  }
  ++n;
  return std::unique_ptr<Ticket>(new Ticket(*this, &per_client_streams_, client));
}

bool Admission::auth_throttled(const std::string& address, Clock::time_point now,
                               std::chrono::milliseconds* retry_after) {
  if (limits_.auth_failures_per_window <= 0) return false;
  core::MutexLock lock(mu_);
  auto it = auth_failures_.find(address);
  if (it == auth_failures_.end()) return false;
  const Clock::time_point end = it->second.start + limits_.auth_failure_window;
  if (now >= end) {
    auth_failures_.erase(it);
    return false;
  }
  if (it->second.failures < limits_.auth_failures_per_window) return false;
  if (retry_after) *retry_after = std::chrono::ceil<std::chrono::milliseconds>(end - now);
  return true;
}

void Admission::auth_failed(const std::string& address, Clock::time_point now) {
  if (limits_.auth_failures_per_window <= 0) return;
  core::MutexLock lock(mu_);
  // Windows that ended are dropped as new failures come, so the map holds
  // only addresses that failed recently.
  std::erase_if(auth_failures_, [&](const auto& e) { return now >= e.second.start + limits_.auth_failure_window; });
  FailureWindow& w = auth_failures_[address];
  if (w.failures == 0) w.start = now;
  ++w.failures;
}

int Admission::connections() const {
  core::MutexLock lock(mu_);
  return connections_;
}

int connections_that_fit(int wanted, int reserve) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return wanted > 0 ? wanted : 1024 - reserve;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  const auto fit = static_cast<long long>(std::min<rlim_t>(lim.rlim_cur, 1 << 20)) - reserve;
  const int most = static_cast<int>(std::max<long long>(fit, 16));
  return wanted > 0 ? std::min(wanted, most) : std::min(most, 10000);
}

}  // namespace tcl::api
