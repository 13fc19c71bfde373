// onboarding/version_json.h — what a job writes about its version (internal
// to onboarding/jobs.cc): the metrics of each platform, the comparison with
// the parent, the training config and the training summary, as the
// version's JSON columns (registry::NewVersion).
//
// Pure functions; thread-safe. Torch-free header.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include <boost/json/object.hpp>

#include "onboarding/job_options.h"
#include "onboarding/promotion_gate.h"
#include "registry/job_queue.h"
#include "trainer/evaluation.h"
#include "trainer/train_job.h"

namespace tcl::onboarding {

// A platform's evaluation in a version's metrics.
boost::json::object metrics_json(const trainer::RankingMetrics& m);

// A gate comparison in a version's metrics (versus_parent): parent = the teacher.
boost::json::object versus_json(const PlatformComparison& c);

// What a student distill trained with, in the version's config.
struct DistillConfig {
  const trainer::DistillTargets* targets = nullptr;   // the plan's (column weight per term)
  std::size_t unlabeled_read = 0, old_bank_read = 0;  // records read for each
  bool ewc = false;                                   // the teacher's Fisher was there
};

// The version's config: the job's options, the trained model's config, the
// starting version, and a distill's method and weights (`student` null for
// a train job or an adapter distill).
std::string config_json(registry::JobKind kind, const JobOptions& o, const trainer::TrainResult& trained,
                        std::optional<std::int64_t> init, const DistillConfig* student);

// The version's training summary: what the training did, and the wall time since `started`.
std::string training_summary_json(std::int64_t job, const trainer::TrainResult& trained, bool fine_tune_scheduled,
                                  std::chrono::steady_clock::time_point started);

}  // namespace tcl::onboarding
