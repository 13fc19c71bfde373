// core/labels.h — training labels (DESIGN §2): per (task, platform) group,
//   y = min_cost(group) / mean(costs),  in (0, 1]; the fastest program gets 1.
// min_cost is the smallest mean cost among the group's measured programs.
// Labels are derived, never stored: they move as uploads lower the minimum.
// Entries that are not measurements (failed, candidates) get y = 0, which no
// real label can equal, and do not take part in the minimum.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/record.h"

namespace tcl::core {

// Generic form (e.g. rows from the registry): entry i belongs to group[i] (any
// id; one id per (task, platform)) and has mean cost mean_costs[i]. An entry
// whose mean cost is not finite and > 0 is excluded (y = 0). Sizes must match
// (asserted).
std::vector<double> labels_from_costs(std::span<const std::uint64_t> group, std::span<const double> mean_costs);

// Records of ONE platform: groups by canonical workload key; only records that
// classify() as kMeasured get a label, the rest get 0.
std::vector<double> compute_labels(std::span<const Record> records);

}  // namespace tcl::core
