#include "tuner/search.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace tcl::tuner {
namespace {

constexpr int kSampleAttemptsPerPick = 50;

// Fresh samples whose keys are in neither `measured` nor `taken`; adds them to `taken`.
std::vector<Point> random_picks(const Space& space, const std::unordered_set<std::string>& measured,
                                std::unordered_set<std::string>& taken, int count, core::SplitMix64& rng) {
  std::vector<Point> out;
  for (int attempt = 0; attempt < kSampleAttemptsPerPick * count && static_cast<int>(out.size()) < count; ++attempt) {
    Point p = space.sample(rng);
    const std::string k = space.key(p);
    if (measured.contains(k) || !taken.insert(k).second) continue;
    out.push_back(std::move(p));
  }
  return out;
}

// A parent index drawn by rank: index i of a best-first list with weight ∝ (n − i).
std::size_t rank_parent(std::size_t n, core::SplitMix64& rng) {
  const std::uint64_t total = n * (n + 1) / 2;
  std::uint64_t r = rng.below(total);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t w = n - i;
    if (r < w) return i;
    r -= w;
  }
  return n - 1;
}

struct Scored {
  Point point;
  double score = 0;
};

}  // namespace

Result<std::vector<Point>> search_round(const Space& space, std::size_t task, CostModel& model,
                                        const std::unordered_set<std::string>& measured,
                                        std::span<const Point> best_measured, int count, const SearchOptions& options,
                                        core::SplitMix64& rng, SearchStats* stats) {
  SearchStats local;
  SearchStats& st = stats ? *stats : local;
  std::unordered_set<std::string> taken;
  if (!model.informed()) {
    std::vector<Point> picks = random_picks(space, measured, taken, count, rng);
    st.random += picks.size();
    return picks;
  }
  // The first population: the best measured programs, then fresh samples.
  std::vector<Point> population;
  for (std::size_t i = 0; i < best_measured.size() && static_cast<int>(i) < options.measured_seeds; ++i)
    population.push_back(best_measured[i]);
  while (static_cast<int>(population.size()) < options.population) population.push_back(space.sample(rng));

  std::unordered_map<std::string, Scored> seen;  // every scored program by key
  std::vector<Scored> ranked;
  for (int gen = 0; gen <= options.generations; ++gen) {
    auto scores = model.score(task, space, population);
    if (!scores) return scores.status();
    st.scored += population.size();
    ranked.clear();
    for (std::size_t i = 0; i < population.size(); ++i) {
      ranked.push_back({population[i], (*scores)[i]});
      seen.try_emplace(space.key(population[i]), ranked.back());
    }
    if (gen == options.generations) break;
    std::stable_sort(ranked.begin(), ranked.end(), [](const Scored& a, const Scored& b) { return a.score > b.score; });
    std::vector<Point> next;
    const std::size_t elites = static_cast<std::size_t>(std::ceil(options.elite_share * ranked.size()));
    for (std::size_t i = 0; i < elites && i < ranked.size(); ++i) next.push_back(ranked[i].point);
    while (static_cast<int>(next.size()) < options.population) {
      auto child = space.mutate(ranked[rank_parent(ranked.size(), rng)].point, rng);
      if (child) {
        next.push_back(std::move(*child));
      } else {
        ++st.invalid;
        next.push_back(space.sample(rng));
      }
    }
    population = std::move(next);
  }
  // The best unmeasured programs by score (ties by key: deterministic), then random picks.
  std::vector<std::pair<const std::string*, const Scored*>> best;
  for (const auto& [key, s] : seen) {
    if (!measured.contains(key)) best.emplace_back(&key, &s);
  }
  std::sort(best.begin(), best.end(), [](const auto& a, const auto& b) {
    return a.second->score != b.second->score ? a.second->score > b.second->score : *a.first < *b.first;
  });
  const int n_random = count > 0 ? static_cast<int>(std::ceil(options.epsilon * count)) : 0;
  std::vector<Point> picks;
  for (const auto& [key, s] : best) {
    if (static_cast<int>(picks.size()) >= count - n_random) break;
    taken.insert(*key);
    picks.push_back(s->point);
  }
  std::vector<Point> extra = random_picks(space, measured, taken, count - static_cast<int>(picks.size()), rng);
  st.random += extra.size();
  picks.insert(picks.end(), std::make_move_iterator(extra.begin()), std::make_move_iterator(extra.end()));
  return picks;
}

}  // namespace tcl::tuner
