// registry/tuning_run_store.h — tuning runs (table tuning_runs, migrations/0008):
// what a tuner reports of a run on a platform, its settings and one row per
// round (the curve), so that the console can draw it.
//
// Thread-safe (every call takes its own pool connection). Does not own
// `pool`; it must outlive the store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "registry/pg_pool.h"

namespace tcl::registry {

struct TuningRound {
  std::int64_t measured = 0;              // measurements so far, this round's included
  std::optional<double> network_seconds;  // nullopt until every task has a valid program
  double wall_seconds = 0;                // since the run started
};

struct TuningRun {
  std::string id;  // [A-Za-z0-9][A-Za-z0-9._-]{0,127}, unique per platform
  std::string network;
  std::string model;
  std::int64_t seed = 0;
  std::vector<TuningRound> rounds;  // in order
  std::string created_at;           // ISO-8601 UTC; set by put()
  std::string updated_at;
};

// [A-Za-z0-9][A-Za-z0-9._-]{0,127}, as the schema requires.
bool is_valid_tuning_run_id(std::string_view id);

class TuningRunStore {
 public:
  explicit TuningRunStore(PgPool& pool);

  // Stores `run` on the platform whose id is `platform_id`, replacing the
  // row of the same id (its settings and all its rounds; created_at kept).
  // OK: the run as stored, `*created` true when the id was new.
  // kInvalidArgument: a bad id or a round's number that is not finite;
  // kNotFound: no such platform.
  Result<TuningRun> put(std::int64_t platform_id, const TuningRun& run, bool* created);
  // The platform's runs, the last updated first.
  Result<std::vector<TuningRun>> list(std::int64_t platform_id);

 private:
  PgPool& pool_;
};

}  // namespace tcl::registry
