// tuner/search.h — one round's picks for one task: Ansor's evolutionary
// search scored by a cost model (Zheng et al., OSDI 2020, §5.1).
//
//   population   `population` programs (with `population_per_pick`, at most
//                that many per program the round picks: a round of 2 needs
//                no 2048), the best measured ones so far (up to
//                `measured_seeds`), the rest sampled from the sketch;
//   generations  each scores the population (the programs not scored
//                before in this round: the model is fixed within it), keeps
//                the top `elite_share`,
//                and fills the rest with mutations of parents drawn by rank
//                (the i-th best with weight ∝ (P − i)), so better programs
//                breed more; every scored program enters a table of the best
//                ones seen;
//   picks        by `pick` (PickRule below) among the table's programs that
//                were never measured (and are distinct), plus
//                ⌈epsilon · count⌉ fresh random samples: the share of random
//                picks that keeps the model honest.
// With a model that is not `informed()` (random) there is no evolution: all
// picks are fresh random samples.
//
// Deterministic for the state of `rng` (and a deterministic model).
// Thread-safety: a call uses only its arguments.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/random.h"
#include "core/status.h"
#include "tuner/cost_model.h"
#include "tuner/space.h"

namespace tcl::tuner {

// Which of the search's scored programs a round measures (issue 50, item 3:
// the sampler's rules as the source of a tuning round's measurements):
//   kTop        Ansor's: the best by score (ties by key).
//   kFast       sampler/'s `fast` over the best spread_pool × count by score:
//               F + D, the score and the Diversity from the programs already
//               picked and the task's measured ones, each min-max normalized.
//   kDiversity  sampler/'s `d` over the same candidates: Diversity alone.
//               What `rdu` (weights 0,1,1) becomes here: the tuner's models
//               give no uncertainty.
// Diversity is the cosine distance between Space::features(), each column
// standardized over the candidates and the measured programs (raw, the
// log2 sizes share one direction and every cosine is near 1).
enum class PickRule { kTop, kFast, kDiversity };
Result<PickRule> pick_rule(std::string_view name);  // "top", "fast", "diversity"
std::string_view pick_rule_name(PickRule rule);

struct SearchOptions {
  int population = 2048;  // as Ansor
  // > 0: a round picking `count` programs searches min(population,
  // population_per_pick × count); 0: always `population` (Ansor). 128 keeps
  // a round of 16 at 2048 and cuts a warm-up round of 2 to 256: a third of
  // the search time at 8 a round and a warm-up of 2, latency no worse
  // (docs/tuning.md, "The search's population scaled with the round").
  int population_per_pick = 128;
  int generations = 4;  // Ansor: 4
  double elite_share = 0.1;
  int measured_seeds = 32;  // best measured programs in the first population
  double epsilon = 0.05;    // Ansor: eps_greedy 0.05
  PickRule pick = PickRule::kTop;
  int spread_pool = 4;  // kFast, kDiversity: candidates per pick, the best by score (< 1 counts as 1)
};

struct SearchStats {
  std::size_t scored = 0;   // programs the model scored (each distinct program once a round)
  std::size_t random = 0;   // picks that are random samples
  std::size_t invalid = 0;  // mutations that found no valid neighbour
};

// The population a round that picks `count` programs searches.
int population_size(const SearchOptions& options, int count);

// Up to `count` programs of `task` whose keys are not in `measured` (fewer
// only when the space has no more). `best_measured` are the task's measured
// programs, fastest first. An error only when the model fails.
Result<std::vector<Point>> search_round(const Space& space, std::size_t task, CostModel& model,
                                        const std::unordered_set<std::string>& measured,
                                        std::span<const Point> best_measured, int count, const SearchOptions& options,
                                        core::SplitMix64& rng, SearchStats* stats = nullptr);

}  // namespace tcl::tuner
