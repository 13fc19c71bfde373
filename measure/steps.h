// measure/steps.h — building TVM steps (core::Step) the way both sketches
// (schedule.h's CPU one, schedule_gpu.h's GPU one) write them, and the
// small sampling helpers they share. Plain functions; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/random.h"
#include "core/record.h"
#include "core/status.h"

namespace tcl::measure::steps {

// The pragma TVM writes for an unroll limit: "auto_unroll_max_step$<n>".
inline constexpr std::string_view kUnrollPragma = "auto_unroll_max_step$";

// Divisors of n up to `limit`, ascending.
std::vector<std::int64_t> divisors(std::int64_t n, std::int64_t limit);
// One element of `v` (not empty), uniformly.
std::int64_t pick(const std::vector<std::int64_t>& v, core::SplitMix64& rng);
// first, first + 1, ..., first + n - 1.
std::vector<std::int32_t> range(int first, int n);

core::Step make(core::StepKind kind, int stage);
// SP: split iterator `iter` of extent `extent` into `lengths` (inner to outer).
core::Step split(int stage, int iter, std::int64_t extent, std::vector<std::int64_t> lengths);
// AN: annotate iterator `iter`.
core::Step annotate(int stage, int iter, core::Annotation a);
// A step whose only payload is a list of ids (RE, FU, ...).
core::Step ids_step(core::StepKind kind, int stage, std::vector<std::int32_t> ids);
// CA: compute `stage` at `target_iter` of `target_stage`.
core::Step compute_at(int stage, int target_stage, int target_iter);
// PR: the unroll pragma with limit `max_step`.
core::Step unroll_pragma(int stage, int max_step);
// The limit of a PR step written by unroll_pragma; kInvalidArgument for any other pragma.
Result<int> unroll_limit(const core::Step& pragma);

}  // namespace tcl::measure::steps
