// api/admission.h — how much of tcld one client may hold: connections (in
// all and per address), stream slots (per client), and failed
// authentications (per address). What nginx calls worker_connections and
// limit_conn, Kestrel MaxConcurrentConnections; the server asks here before
// it gives anything away (api/server.h).
//
// A "client" for stream shares is the bearer token it presents, or its
// address when it presents none, so one read token cannot hold every stream
// slot however many addresses it comes from. Failed authentications are
// counted per address in a fixed window; past the limit the address is
// answered 429 without a token lookup until the window ends, so guessing
// costs neither a database query nor a churned token cache.
//
// Thread-safe. Claims are RAII tickets that must not outlive the Admission.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "core/mutex.h"

namespace tcl::api {

struct AdmissionLimits {
  int max_connections = 10000;            // in all; more are closed at accept
  int max_connections_per_address = 256;  // 0 = no per-address cap (behind a proxy)
  int max_streams_per_client = 4;         // of the server's max_streams
  int auth_failures_per_window = 20;      // per address; 0 = no throttle
  std::chrono::milliseconds auth_failure_window{10000};
};

class Admission {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Admission(AdmissionLimits limits) : limits_(limits) {}
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  // One claim (a connection of an address, a stream slot of a client);
  // released when the ticket is destroyed.
  class Ticket {
   public:
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;

   private:
    friend class Admission;
    Ticket(Admission& a, std::map<std::string, int>* counts, std::string key)
        : a_(a), counts_(counts), key_(std::move(key)) {}
    Admission& a_;
    std::map<std::string, int>* counts_;
    std::string key_;
  };

  enum class Refusal { kNone, kTotal, kPerAddress };
  // A new connection from `address`: a ticket, or null and why not.
  std::unique_ptr<Ticket> admit_connection(const std::string& address, Refusal* why) EXCLUDES(mu_);
  // A stream slot for `client` (see above): null when it holds its share.
  std::unique_ptr<Ticket> admit_stream(const std::string& client) EXCLUDES(mu_);

  // Failed authentications: is `address` refused until the window ends (and
  // for how long), and count one more failure.
  bool auth_throttled(const std::string& address, Clock::time_point now,
                      std::chrono::milliseconds* retry_after = nullptr) EXCLUDES(mu_);
  void auth_failed(const std::string& address, Clock::time_point now) EXCLUDES(mu_);

  int connections() const EXCLUDES(mu_);
  const AdmissionLimits& limits() const { return limits_; }

 private:
  void release(std::map<std::string, int>* counts, const std::string& key) EXCLUDES(mu_);

  struct FailureWindow {
    Clock::time_point start;
    int failures = 0;
  };

  const AdmissionLimits limits_;
  mutable core::Mutex mu_;
  int connections_ GUARDED_BY(mu_) = 0;
  std::map<std::string, int> per_address_ GUARDED_BY(mu_);
  std::map<std::string, int> per_client_streams_ GUARDED_BY(mu_);
  std::map<std::string, FailureWindow> auth_failures_ GUARDED_BY(mu_);
};

// The number of connections tcld can hold given its open-file limit: the
// soft RLIMIT_NOFILE is raised to the hard one first (nginx's
// worker_rlimit_nofile), then `reserve` descriptors are kept for the
// database pool, logs and model files. `wanted` (0 = as many as fit) is
// lowered to what fits.
int connections_that_fit(int wanted, int reserve = 256);

}  // namespace tcl::api
