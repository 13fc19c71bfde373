// bench/lib/distill_levers.h — the distillation levers the benches study
// and no job sets (trainer::DistillLevers: the old KD's factor on the new
// platform's programs, the student's start at the column, the feature term
// on the bank, the mix back with the teacher). The trainer implements them;
// the benches own the knobs: their flags, and the factors below. What each
// lever measured is in docs/continual.md.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "core/features.h"

namespace tcl::bench {

// The factors of old_weight each old platform's KD term takes on platform
// k's own programs (trainer::DistillLevers::old_weight_on_new_programs):
// `same_kind` for an old platform of k's target kind (core::same_target_kind),
// `other_kind` for one of another kind. The teacher learned an old
// platform's order on that platform's kind of programs; on another kind's
// (a CPU's order of GPU schedules) its targets hold the student's shared
// trunk to an order nobody measured, while the bank still carries the
// platform's own programs. Empty when every factor is 1 (the trainer's
// default).
inline std::vector<double> old_weight_on_new_programs(std::span<const float> new_descriptor,
                                                      const std::vector<std::vector<float>>& old_descriptors,
                                                      double other_kind, double same_kind = 1.0) {
  std::vector<double> factors;
  for (const auto& h : old_descriptors)
    factors.push_back(core::same_target_kind(h, new_descriptor) ? same_kind : other_kind);
  if (std::all_of(factors.begin(), factors.end(), [](double f) { return f == 1.0; })) factors.clear();
  return factors;
}

}  // namespace tcl::bench
