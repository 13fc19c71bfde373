// api/handlers/sample_requests.h — which candidates to measure next (DESIGN §6, §8):
//   POST /v1/platforms/{name}/sample-requests   select and store (201)
//        {"budget": N} or {"fraction": f in (0, 1]}  (of the unmeasured pool),
//        "strategy": "fast" (default) | "rdu" | "random" | "uniform" | "r" | "d" | "u",
//        "weights": {"r", "d", "u"}, "seed", "model" (alias or version,
//        default production), "mc_samples" (default 8), "min_per_task" (2),
//        "random_share" (in [0, 1], default 0: sampler::SampleOptions::random_share)
//   GET  /v1/platforms/{name}/sample-requests    the platform's 100 most recent
//        requests (its onboarding rounds: picked, measured), without items
//   GET  /v1/sample-requests/{id}               status, progress, items;
//        with Accept: application/x-ndjson the records still to measure
//   POST /v1/sample-requests/{id}/cancel
//
// The pool is the platform's candidates that have no measurement on it and
// are not pending in another open request. For every strategy but random,
// the production student (or `model`) conditioned on the platform's
// descriptor gives each candidate an embedding (its pooled state) and an
// uncertainty: the spread of MC-dropout scores plus, when the version
// covers other platforms, the spread of its scores under their
// descriptors (DESIGN §6, round 1). Measured programs of the same tasks
// count as already selected for Diversity, so a later round spreads away
// from what was measured. Once a fine-tuning job made the platform's active
// column (a train job with "init", alias active.<platform>), it scores the
// pool instead and its disagreement with the student joins the uncertainty,
// so a round learns from the rounds before it. The round itself is
// onboarding/round.h (as bench_onboarding's); this file parses, reads the
// pool from the registry, stores and answers.
//
// Abuse (issue 45, finding 6): what the pool's task sizes alone refuse (an
// empty pool, a budget over the pool or under the per-task minimums) is
// answered 400 from one aggregate (SampleStore::pool_task_sizes) before any
// record is read or scored; and at most `max_concurrent` requests are
// computed at once (one more is answered 503 + Retry-After at once), so
// the handler threads that GETs and predict need stay free.
//
// Does not own what it is given; all of it must outlive the router.
#pragma once

#include <prometheus/registry.h>

#include "api/model_cache.h"
#include "api/router.h"
#include "registry/platform_store.h"
#include "registry/sample_store.h"
#include "registry/upload_store.h"

namespace tcl::api {

struct SampleRequestRouteOptions {
  int max_concurrent = 1;  // POST .../sample-requests computed at once (>= 1)
};

// GET /v1/platforms/{name}/sample-requests: 200 {"sample_requests": [...]}
// newest first (SampleStore::list), 404 for an unknown platform.
Response handle_list_sample_requests(const Request& req, registry::PlatformStore& platforms,
                                     registry::SampleStore& samples);

// Metrics: tcld_sample_requests_total{strategy}, tcld_sample_request_items_total
// {strategy} (programs picked) and tcld_sample_request_seconds{phase="embed"|"select"}.
void add_sample_request_routes(Router& router, registry::PlatformStore& platforms, registry::UploadStore& uploads,
                               registry::SampleStore& samples, ModelCache& models, prometheus::Registry& metrics,
                               SampleRequestRouteOptions options = {});

}  // namespace tcl::api
