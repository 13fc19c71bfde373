// api/handlers/jobs.h — training and distillation jobs:
//   POST /v1/platforms/{name}/jobs   {"kind": "train"|"distill", ...options} → 202, the job;
//                                    400 naming a bad option (onboarding/job_options.h), nothing queued
//   GET  /v1/platforms/{name}/jobs   the platform's recent jobs
//   GET  /v1/jobs                    the 100 most recent jobs of every platform (the console's Jobs page)
//   GET  /v1/jobs/{id}               state, progress, error, result version
//   POST /v1/jobs/{id}/cancel        queued → cancelled now; running → stops at its next heartbeat
// Jobs run in workers (daemon/job_worker.h), never in a request.
// Does not own the stores; they must outlive the router.
#pragma once

#include "api/router.h"
#include "registry/job_queue.h"
#include "registry/platform_store.h"

namespace tcl::api {

// GET /v1/jobs: 200 {"jobs": [...]}, newest first, at most 100.
Response handle_list_jobs(const Request& req, registry::JobQueue& jobs);

void add_job_routes(Router& router, registry::PlatformStore& platforms, registry::JobQueue& jobs);

}  // namespace tcl::api
