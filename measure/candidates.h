// measure/candidates.h — unmeasured candidate records for a network's tasks:
// `per_task` distinct schedules per task, sampled deterministically from the
// seed, written for the target and hardware params of `hw`: the CPU space
// (schedule.h) for an llvm target, the GPU space (schedule_gpu.h, limits
// from hw.params) for a cuda target.
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
// the space is smaller), costs [0] (DESIGN §2: unmeasured). None for a
// workload the target's space does not cover (softmax on cuda).
std::vector<core::Record> workload_candidates(const Workload& w, int count, std::uint64_t seed, const HardwareInfo& hw);

// Every task of `model` (operators.h model_tasks), `per_task` each, task by
// task (tasks the target's space does not cover give none). kInvalidArgument
// for an unknown model.
Result<std::vector<core::Record>> generate_candidates(std::string_view model, int per_task, std::uint64_t seed,
                                                      const HardwareInfo& hw);

}  // namespace tcl::measure
