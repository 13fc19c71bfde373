// tuner/search.h — one round's picks for one task: Ansor's evolutionary
// search scored by a cost model (Zheng et al., OSDI 2020, §5.1).
//
//   population   `population` programs: the best measured ones so far
//                (up to `measured_seeds`), the rest sampled from the sketch;
//   generations  each scores the population, keeps the top `elite_share`,
//                and fills the rest with mutations of parents drawn by rank
//                (the i-th best with weight ∝ (P − i)), so better programs
//                breed more; every scored program enters a table of the best
//                ones seen;
//   picks        the table's top by score that were never measured (and are
//                distinct), plus ⌈epsilon · count⌉ fresh random samples: the
//                share of random picks that keeps the model honest.
// With a model that is not `informed()` (random) there is no evolution: all
// picks are fresh random samples.
//
// Deterministic for the state of `rng` (and a deterministic model).
// Thread-safety: a call uses only its arguments.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/random.h"
#include "core/status.h"
#include "tuner/cost_model.h"
#include "tuner/space.h"

namespace tcl::tuner {

struct SearchOptions {
  int population = 2048;  // as Ansor
  int generations = 4;    // Ansor: 4
  double elite_share = 0.1;
  int measured_seeds = 32;  // best measured programs in the first population
  double epsilon = 0.05;    // Ansor: eps_greedy 0.05
};

struct SearchStats {
  std::size_t scored = 0;   // programs the model scored
  std::size_t random = 0;   // picks that are random samples
  std::size_t invalid = 0;  // mutations that found no valid neighbour
};

// Up to `count` programs of `task` whose keys are not in `measured` (fewer
// only when the space has no more). `best_measured` are the task's measured
// programs, fastest first. An error only when the model fails.
Result<std::vector<Point>> search_round(const Space& space, std::size_t task, CostModel& model,
                                        const std::unordered_set<std::string>& measured,
                                        std::span<const Point> best_measured, int count, const SearchOptions& options,
                                        core::SplitMix64& rng, SearchStats* stats = nullptr);

}  // namespace tcl::tuner
