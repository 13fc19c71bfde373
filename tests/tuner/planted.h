// tests/tuner/planted.h — a planted latency for the tuner's tests: a
// deterministic function of a CPU tiled schedule, fast where the innermost
// tile is 8 floats, vectorized, one level parallel, unrolled by 16 and with a
// cache write, so that a model can learn it and a search can find its
// minimum (1e-4 s).
#pragma once

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/record.h"
#include "tuner/space.h"

namespace tcl::tuner::testing {

inline double planted_seconds(const measure::Schedule& s) {
  double cost = 1.0;
  const std::size_t innermost = static_cast<std::size_t>(s.spatial_order.back());
  cost += std::abs(std::log2(static_cast<double>(s.spatial_tiles[innermost][2])) - 3.0);
  cost += s.vectorize ? 0.0 : 1.5;
  cost += std::abs(s.parallel_levels - 1);
  cost += s.auto_unroll_max_step == 16 ? 0.0 : 0.5;
  cost += s.cache_write ? 0.0 : 0.5;
  return 1e-4 * cost;
}

inline double planted_seconds(const Space& /*space*/, const Point& p) {
  return planted_seconds(std::get<measure::Schedule>(p));
}

// A measurer hook over the spaces of a network's tasks: each record gets
// its planted cost (found by its workload key), `scale` times for its task.
inline std::function<std::vector<core::Record>(std::span<const core::Record>)> planted_measurer(
    std::vector<Space> spaces, std::vector<double> scale) {
  return [spaces = std::move(spaces), scale = std::move(scale)](std::span<const core::Record> records) {
    std::vector<core::Record> out(records.begin(), records.end());
    for (core::Record& r : out) {
      for (std::size_t i = 0; i < spaces.size(); ++i) {
        if (measure::encode_workload_key(spaces[i].workload()) != r.workload_key) continue;
        const double s = scale[i] * planted_seconds(spaces[i], *spaces[i].decode(r.steps));
        r.costs = {s, s};
        r.error_no = 0;
      }
    }
    return out;
  };
}

}  // namespace tcl::tuner::testing
