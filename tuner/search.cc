#include "tuner/search.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <unordered_map>

#include "sampler/rdu.h"

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

using Candidate = std::pair<const std::string*, const Scored*>;  // key, program and score

// Scores the programs of `population` not in `seen` (each once) into `seen`. The
// elites and the mutations that land on a program already scored cost nothing:
// the model is fixed within a round, so a program's score is too.
Status score_new(const Space& space, std::size_t task, CostModel& model, const std::vector<Point>& population,
                 std::unordered_map<std::string, Scored>& seen, SearchStats& st) {
  std::vector<Point> fresh;
  std::unordered_set<std::string> queued;
  for (const Point& p : population) {
    std::string k = space.key(p);
    if (!seen.contains(k) && queued.insert(std::move(k)).second) fresh.push_back(p);
  }
  if (fresh.empty()) return Status::ok();
  auto scores = model.score(task, space, fresh);
  if (!scores) return scores.status();
  if (scores->size() != fresh.size()) return Status::internal("the cost model returned a different count");
  st.scored += fresh.size();
  for (std::size_t i = 0; i < fresh.size(); ++i) seen.try_emplace(space.key(fresh[i]), Scored{fresh[i], (*scores)[i]});
  return Status::ok();
}

// Space::features() of `points` then `more`, each column standardized over all
// of them (a constant column → 0), row-major.
std::vector<float> standardized_features(const Space& space, std::span<const Candidate> points,
                                         std::span<const Point> more, std::size_t* dim) {
  std::vector<std::vector<float>> rows;
  for (const auto& c : points) rows.push_back(space.features(c.second->point));
  for (const Point& p : more) rows.push_back(space.features(p));
  *dim = rows.empty() ? 0 : rows[0].size();
  std::vector<float> out(rows.size() * *dim);
  for (std::size_t j = 0; j < *dim; ++j) {
    double sum = 0, sq = 0;
    for (const auto& r : rows) sum += r[j], sq += static_cast<double>(r[j]) * r[j];
    const double n = static_cast<double>(rows.size()), mean = sum / n;
    const double sd = std::sqrt(std::max(0.0, sq / n - mean * mean));
    for (std::size_t i = 0; i < rows.size(); ++i)
      out[i * *dim + j] = sd > 1e-9 ? static_cast<float>((rows[i][j] - mean) / sd) : 0.0F;
  }
  return out;
}

// Up to `count` of `best` (best first) by the sampler's kFast or kD over the
// first spread_pool × count of them, spread away from `measured`.
Result<std::vector<Candidate>> spread_picks(const Space& space, std::span<const Candidate> best,
                                            std::span<const Point> measured, int count, const SearchOptions& options,
                                            core::SplitMix64& rng) {
  if (count <= 0 || best.empty()) return std::vector<Candidate>{};
  const std::size_t n = std::min(best.size(), static_cast<std::size_t>(std::max(1, options.spread_pool)) * count);
  const std::span<const Candidate> candidates = best.first(n);
  std::size_t dim = 0;  // >= 1: every space has features
  const std::vector<float> features = standardized_features(space, candidates, measured, &dim);
  const bool fast = options.pick == PickRule::kFast;
  std::vector<float> predicted;  // kFast's F; kD reads none (and must not fail on a score it ignores)
  if (fast) {
    for (const auto& c : candidates) predicted.push_back(static_cast<float>(c.second->score));
  }
  const std::vector<std::int32_t> task(n, 0), measured_task(measured.size(), 0);
  const std::span<const float> rows(features);
  sampler::Pool pool;
  pool.count = static_cast<std::int64_t>(n);
  pool.dim = static_cast<std::int64_t>(dim);
  pool.embeddings = rows.first(n * dim);
  pool.predicted = predicted;
  pool.task = task;
  pool.num_tasks = 1;
  pool.measured_count = static_cast<std::int64_t>(measured.size());
  pool.measured_embeddings = rows.subspan(n * dim);
  pool.measured_task = measured_task;
  sampler::SampleOptions so;
  so.budget = std::min<std::int64_t>(count, pool.count);
  so.strategy = fast ? sampler::Strategy::kFast : sampler::Strategy::kD;
  so.seed = rng.next();
  so.min_per_task = 0;
  auto picks = sampler::select(pool, so);
  if (!picks) return picks.status();
  std::vector<Candidate> out;
  for (const sampler::Pick& p : *picks) out.push_back(candidates[static_cast<std::size_t>(p.index)]);
  return out;
}

}  // namespace

int population_size(const SearchOptions& options, int count) {
  if (options.population_per_pick <= 0) return options.population;
  const std::int64_t scaled = static_cast<std::int64_t>(options.population_per_pick) * std::max(count, 1);
  return static_cast<int>(std::min<std::int64_t>(options.population, scaled));
}

Result<PickRule> pick_rule(std::string_view name) {
  if (name == "top") return PickRule::kTop;
  if (name == "fast") return PickRule::kFast;
  if (name == "diversity") return PickRule::kDiversity;
  return Status::invalid_argument("pick rule '" + std::string(name) + "': use top, fast or diversity");
}

std::string_view pick_rule_name(PickRule rule) {
  switch (rule) {
    case PickRule::kTop: return "top";
    case PickRule::kFast: return "fast";
    case PickRule::kDiversity: return "diversity";
  }
  return "top";
}

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
  const int size = population_size(options, count);
  std::vector<Point> population;
  for (std::size_t i = 0; i < best_measured.size() && static_cast<int>(i) < options.measured_seeds; ++i)
    population.push_back(best_measured[i]);
  while (static_cast<int>(population.size()) < size) population.push_back(space.sample(rng));

  std::unordered_map<std::string, Scored> seen;  // every scored program by key
  std::vector<Scored> ranked;
  for (int gen = 0; gen <= options.generations; ++gen) {
    if (Status s = score_new(space, task, model, population, seen, st); !s) return s;
    ranked.clear();
    for (const Point& p : population) ranked.push_back({p, seen.at(space.key(p)).score});
    if (gen == options.generations) break;
    std::stable_sort(ranked.begin(), ranked.end(), [](const Scored& a, const Scored& b) { return a.score > b.score; });
    std::vector<Point> next;
    const std::size_t elites = static_cast<std::size_t>(std::ceil(options.elite_share * ranked.size()));
    for (std::size_t i = 0; i < elites && i < ranked.size(); ++i) next.push_back(ranked[i].point);
    while (static_cast<int>(next.size()) < size) {
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
  // The unmeasured programs by score (ties by key: deterministic); the rule's picks among them, then random picks.
  std::vector<Candidate> best;
  for (const auto& [key, s] : seen) {
    if (!measured.contains(key)) best.emplace_back(&key, &s);
  }
  std::sort(best.begin(), best.end(), [](const auto& a, const auto& b) {
    return a.second->score != b.second->score ? a.second->score > b.second->score : *a.first < *b.first;
  });
  const int n_random = count > 0 ? static_cast<int>(std::ceil(options.epsilon * count)) : 0;
  if (options.pick != PickRule::kTop) {
    auto spread = spread_picks(space, best, best_measured, count - n_random, options, rng);
    if (!spread) return spread.status();
    best = std::move(*spread);
  }
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
