// registry/sample_store.h — sample requests: which candidates of a platform
// to measure next, with the scores that chose them (tables sample_requests,
// sample_request_items; 0001 and 0006).
//
// A request is stored with all its items in one transaction (never half).
// Items are fulfilled by measurements uploaded later, whatever upload they
// come in: refresh() marks every item whose program has a measurement on the
// request's platform (failed ones included: the lab tried it) and completes
// the request when none is left. get() refreshes first, so what a client
// reads is always current.
//
//   open ──(every item measured)──▶ completed
//     └───────(cancel)────────────▶ cancelled
//
// Thread-safe (every call takes its own pool connection). Does not own
// `pool`; it must outlive the store.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "registry/pg_pool.h"

namespace tcl::registry {

struct SampleItem {
  std::int32_t rank = 0;  // 0 = picked first
  std::string program_id;
  // The normalized score terms at the moment of the pick; NaN = not used
  // (random strategy), stored as NULL.
  double r = 0, d = 0, u = 0, score = 0;
  bool measured = false;
};

struct NewSampleRequest {
  std::int64_t platform_id = 0;
  std::string strategy;                       // "rdu" | "random" | "r" | "d" | "u"
  std::string params_json = "{}";             // the request as given and as resolved (budget, weights, seed, ...)
  std::optional<std::int64_t> model_version;  // the version whose embeddings were used
  std::vector<SampleItem> items;              // in pick order; ranks are assigned here
};

struct SampleRequest {
  std::int64_t id = 0;
  std::string platform;
  std::int64_t platform_id = 0;
  std::string strategy;
  std::string params_json;
  std::optional<std::int64_t> model_version;
  std::string status;  // "open" | "completed" | "cancelled"
  std::string created_at;
  std::string completed_at;  // "" until completed
  std::int64_t items = 0;
  std::int64_t measured = 0;
};

// One platform's onboarding progress (a /metrics gauge set; see
// SampleStore::onboarding_counts).
struct OnboardingCounts {
  std::string platform;
  std::int64_t candidates = 0;       // programs in the candidate pool
  std::int64_t measurements = 0;     // measurements stored (failed ones included)
  std::int64_t sample_requests = 0;  // rounds asked for (cancelled ones left out)
  std::int64_t to_measure = 0;       // items of open requests not measured yet (as of their last refresh)
};

class SampleStore {
 public:
  explicit SampleStore(PgPool& pool) : pool_(pool) {}

  // Stores a request with its items. kInvalidArgument: no items, a bad
  // strategy, params that are not a JSON object. kNotFound: no such platform.
  Result<SampleRequest> create(const NewSampleRequest& request);
  // The request, refreshed first (see top). kNotFound: no such request.
  Result<SampleRequest> get(std::int64_t id);
  // The platform's requests newest first, at most `limit` (clamped to
  // 1..1000), without their items; the open ones refreshed first (see top),
  // so `measured` counts every upload so far. An unknown platform id: empty.
  Result<std::vector<SampleRequest>> list(std::int64_t platform_id, int limit);
  // Its items in pick order (as of the last refresh).
  Result<std::vector<SampleItem>> items(std::int64_t id);
  // The candidate record lines of the items still to measure, in pick order
  // (refreshed first). kNotFound: no such request.
  Status for_each_record_to_measure(std::int64_t id, const std::function<void(const std::string&)>& sink);
  // Cancels an open request (its items stop counting as pending); a cancelled
  // one is returned as it is. kNotFound: no such request;
  // kFailedPrecondition: it is completed.
  Result<SampleRequest> cancel(std::int64_t id);
  // Programs picked by the platform's open requests and not measured yet: a
  // new request leaves them out, so two rounds never ask for one program.
  Result<std::unordered_set<std::string>> pending_programs(std::int64_t platform_id);
  // How many of the platform's candidates a new round could pick, by task:
  // those with no measurement on it and not pending in an open request. One
  // aggregate over ids (no record is read or parsed), so a request that the
  // sizes alone refuse is refused before the long work (issue 45, finding 6).
  // Grouped by stored task: a round's pool, grouped by its records' workload
  // keys, has at least as many tasks, so a minimum from these is a lower bound.
  Result<std::vector<std::int64_t>> pool_task_sizes(std::int64_t platform_id);
  // Every platform's onboarding progress, by name, in one statement that
  // reads the small tables only (uploads' reports, sample requests and their
  // items), never the measurements: cheap enough for every scrape.
  Result<std::vector<OnboardingCounts>> onboarding_counts();

 private:
  PgPool& pool_;
};

}  // namespace tcl::registry
