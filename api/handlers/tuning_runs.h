// api/handlers/tuning_runs.h — a platform's tuning runs (registry/tuning_run_store.h), as
// `tclctl tune` reports them after every round, for the console's curves:
//   PUT /v1/platforms/{name}/tuning-runs/{run_id}  (write) {"network", "model", "seed",
//       "rounds": [{"measured", "network_seconds" (null: not yet), "wall_seconds"}]}
//       → 201 (a new run) or 200 (the run replaced: the same body again is a no-op);
//       400 naming the field; 404 unknown platform; 413 over kMaxTuningRounds rounds or the body limit
//   GET /v1/platforms/{name}/tuning-runs           every run of the platform, the last updated first
// Does not own the stores; they must outlive the router.
#pragma once

#include <cstddef>

#include "api/router.h"
#include "registry/platform_store.h"
#include "registry/tuning_run_store.h"

namespace tcl::api {

inline constexpr std::size_t kMaxTuningRounds = 20000;
inline constexpr std::size_t kTuningRunBodyLimit = std::size_t{2} << 20;  // 20,000 rounds fit

// Path parameters "name" and (PUT) "run_id".
Response handle_put_tuning_run(const Request& req, registry::PlatformStore& platforms, registry::TuningRunStore& runs);
Response handle_list_tuning_runs(const Request& req, registry::PlatformStore& platforms,
                                 registry::TuningRunStore& runs);

void add_tuning_run_routes(Router& router, registry::PlatformStore& platforms, registry::TuningRunStore& runs);

}  // namespace tcl::api
