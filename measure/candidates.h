// measure/candidates.h — unmeasured candidate records for a network's tasks:
// `per_task` distinct schedules per task, sampled deterministically from the
// seed, written for this machine's target and hardware params.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/record.h"
#include "core/status.h"
#include "measure/hardware.h"
#include "measure/operators.h"

namespace tcl::measure {

// Candidates of one workload: up to `count` distinct schedules (fewer when
// the space is smaller), costs [0] (DESIGN §2: unmeasured).
std::vector<core::Record> workload_candidates(const Workload& w, int count, std::uint64_t seed, const HardwareInfo& hw);

// Every task of `model` (operators.h model_tasks), `per_task` each, task by
// task. kInvalidArgument for an unknown model.
Result<std::vector<core::Record>> generate_candidates(std::string_view model, int per_task, std::uint64_t seed,
                                                      const HardwareInfo& hw);

}  // namespace tcl::measure
