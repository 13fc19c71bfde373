#include "core/labels.h"

#include <cassert>
#include <cmath>
#include <string>
#include <unordered_map>

#include "core/program_id.h"

namespace tcl::core {

std::vector<double> labels_from_costs(std::span<const std::uint64_t> group, std::span<const double> mean_costs) {
  assert(group.size() == mean_costs.size());
  const std::size_t n = group.size();
  std::unordered_map<std::uint64_t, double> best;
  best.reserve(n / 8 + 1);
  auto usable = [](double c) { return std::isfinite(c) && c > 0; };
  for (std::size_t i = 0; i < n; ++i) {
    if (!usable(mean_costs[i])) continue;
    auto [it, inserted] = best.try_emplace(group[i], mean_costs[i]);
    if (!inserted && mean_costs[i] < it->second) it->second = mean_costs[i];
  }
  std::vector<double> y(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    if (!usable(mean_costs[i])) continue;
    y[i] = best.at(group[i]) / mean_costs[i];
  }
  return y;
}

std::vector<double> compute_labels(std::span<const Record> records) {
  std::unordered_map<std::string, std::uint64_t> task_ids;
  std::vector<std::uint64_t> group(records.size());
  std::vector<double> costs(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    auto [it, inserted] = task_ids.try_emplace(canonical_workload_key(r.workload_key), task_ids.size());
    group[i] = it->second;
    costs[i] = classify(r) == RecordClass::kMeasured ? mean_cost(r) : 0.0;
  }
  return labels_from_costs(group, costs);
}

}  // namespace tcl::core
