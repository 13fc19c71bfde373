// The search and the cost models: a seed gives the same picks; measured
// programs are never picked again; an online model learns a planted latency
// and then picks faster programs than random sampling does; the lineage's
// prior, calibrated, guides lineage+online before it has learned anything;
// the sampler's pick rules (fast, diversity) are deterministic, spread their
// picks wider than the top by score, and fast stays among the fast ones.
#include "tuner/search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "tests/tuner/planted.h"

namespace tcl::tuner {
namespace {

using testing::planted_seconds;

Space matmul_space() { return *Space::create({measure::OpKind::kMatmul, {128, 256, 256}}, measure::local_hardware()); }

// `n` random programs of `space`, measured by the planted latency.
void measure_random(const Space& space, int n, std::uint64_t seed, std::vector<Point>* points,
                    std::vector<double>* seconds) {
  core::SplitMix64 rng(seed);
  for (int i = 0; i < n; ++i) {
    points->push_back(space.sample(rng));
    seconds->push_back(planted_seconds(space, points->back()));
  }
}

double mean_planted(const Space& space, const std::vector<Point>& picks) {
  double sum = 0;
  for (const Point& p : picks) sum += planted_seconds(space, p);
  return sum / static_cast<double>(picks.size());
}

// A lineage that knows the planted latency exactly (scores: higher = faster).
LineageScorer oracle_of(const Space& space) {
  return [&space](std::span<const core::Record> records) -> Result<std::vector<double>> {
    std::vector<double> out;
    for (const core::Record& r : records) out.push_back(-planted_seconds(space, *space.decode(r.steps)));
    return out;
  };
}

TEST(SearchTest, TheSameSeedGivesTheSamePicks) {
  const Space space = matmul_space();
  std::vector<Point> points;
  std::vector<double> seconds;
  measure_random(space, 32, 1, &points, &seconds);
  auto run = [&](std::uint64_t seed) {
    auto model = make_cost_model("online", nullptr, 5);
    EXPECT_TRUE((*model)->learn(0, space, points, seconds));
    core::SplitMix64 rng(seed);
    SearchOptions options;
    options.population = 128;
    auto picks = search_round(space, 0, **model, {}, points, 16, options, rng);
    EXPECT_TRUE(picks);
    std::vector<std::string> keys;
    for (const Point& p : *picks) keys.push_back(space.key(p));
    return keys;
  };
  const auto a = run(9), b = run(9), c = run(10);
  ASSERT_EQ(a.size(), 16u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(SearchTest, ARoundScoresEachProgramOnce) {
  // The elites of every generation and the mutations that land on a program
  // already scored are not sent to the model again (tcld's predict is the
  // search's cost at small rounds); the picks are the model's best.
  const Space space = matmul_space();
  std::unordered_map<std::string, int> sent;
  std::size_t calls = 0;
  double fastest = INFINITY;
  LineageScorer counting = [&](std::span<const core::Record> records) -> Result<std::vector<double>> {
    ++calls;
    std::vector<double> out;
    for (const core::Record& r : records) {
      const Point p = *space.decode(r.steps);
      ++sent[space.key(p)];
      fastest = std::min(fastest, planted_seconds(space, p));
      out.push_back(-planted_seconds(space, p));
    }
    return out;
  };
  auto model = make_cost_model("lineage", counting, 5);
  ASSERT_TRUE(model);
  SearchOptions options;
  options.population = 256;
  core::SplitMix64 rng(4);
  SearchStats stats;
  auto picks = search_round(space, 0, **model, {}, {}, 8, options, rng, &stats);
  ASSERT_TRUE(picks) << picks.status().message();
  EXPECT_LE(calls, static_cast<std::size_t>(options.generations) + 1);  // one a generation at most
  for (const auto& [key, n] : sent) EXPECT_EQ(n, 1) << key;
  EXPECT_EQ(stats.scored, sent.size());
  // The first pick is the fastest program the round scored.
  ASSERT_EQ(picks->size(), 8u);
  EXPECT_DOUBLE_EQ(planted_seconds(space, (*picks)[0]), fastest);
}

TEST(SearchTest, AGenerationWithNothingNewScoresNothing) {
  // Every program kept as an elite: after the first generation nothing is new,
  // and the model is not called again (nor with an empty batch).
  const Space space = matmul_space();
  std::size_t calls = 0, empty = 0, sent = 0;
  LineageScorer counting = [&](std::span<const core::Record> records) -> Result<std::vector<double>> {
    ++calls;
    empty += records.empty();
    sent += records.size();
    return std::vector<double>(records.size(), 1.0);
  };
  auto model = make_cost_model("lineage", counting, 5);
  ASSERT_TRUE(model);
  SearchOptions options;
  options.population = 64;
  options.elite_share = 1.0;
  core::SplitMix64 rng(4);
  SearchStats stats;
  auto picks = search_round(space, 0, **model, {}, {}, 4, options, rng, &stats);
  ASSERT_TRUE(picks) << picks.status().message();
  EXPECT_EQ(empty, 0u);
  EXPECT_EQ(calls, 1u);
  EXPECT_EQ(stats.scored, sent);
  EXPECT_LE(sent, static_cast<std::size_t>(options.population));
  EXPECT_EQ(picks->size(), 4u);
}

TEST(SearchTest, APopulationPerPickScalesTheSearchWithTheRound) {
  // A round of 2 searches 2 × 16 programs a generation, a round of 64 the
  // whole population; 0 keeps the population whatever the round.
  SearchOptions options;
  options.population = 512;
  options.population_per_pick = 0;
  EXPECT_EQ(population_size(options, 2), 512);
  options.population_per_pick = 16;
  EXPECT_EQ(population_size(options, 2), 32);
  EXPECT_EQ(population_size(options, 64), 512);
  EXPECT_EQ(population_size(options, 0), 16);

  const Space space = matmul_space();
  auto scored = [&](int count) {
    auto model = make_cost_model("lineage", oracle_of(space), 5);
    core::SplitMix64 rng(4);
    SearchStats stats;
    auto picks = search_round(space, 0, **model, {}, {}, count, options, rng, &stats);
    EXPECT_TRUE(picks) << picks.status().message();
    EXPECT_EQ(picks->size(), static_cast<std::size_t>(count));
    return stats.scored;
  };
  // Each generation scores at most the population (elites are not scored again).
  EXPECT_LE(scored(2), static_cast<std::size_t>(32 * (options.generations + 1)));
  EXPECT_GT(scored(32), static_cast<std::size_t>(32 * (options.generations + 1)));
}

TEST(SearchTest, MeasuredProgramsAreNeverPickedAgain) {
  const Space space = matmul_space();
  std::vector<Point> points;
  std::vector<double> seconds;
  measure_random(space, 64, 2, &points, &seconds);
  std::unordered_set<std::string> measured;
  for (const Point& p : points) measured.insert(space.key(p));
  auto model = make_cost_model("online", nullptr, 5);
  ASSERT_TRUE((*model)->learn(0, space, points, seconds));
  core::SplitMix64 rng(4);
  SearchOptions options;
  options.population = 128;
  // The measured programs seed the population, so the search meets them again.
  auto picks = search_round(space, 0, **model, measured, points, 32, options, rng);
  ASSERT_TRUE(picks);
  EXPECT_EQ(picks->size(), 32u);
  std::unordered_set<std::string> keys;
  for (const Point& p : *picks) {
    EXPECT_FALSE(measured.contains(space.key(p)));
    EXPECT_TRUE(keys.insert(space.key(p)).second) << "a program picked twice";
  }
}

TEST(SearchTest, AnOnlineModelPicksFasterProgramsThanRandomSampling) {
  const Space space = matmul_space();
  std::vector<Point> points;
  std::vector<double> seconds;
  measure_random(space, 96, 3, &points, &seconds);
  auto online = make_cost_model("online", nullptr, 5);
  auto random = make_cost_model("random", nullptr, 5);
  ASSERT_TRUE((*online)->learn(0, space, points, seconds));
  SearchOptions options;
  options.population = 1024;
  core::SplitMix64 rng_a(6), rng_b(6);
  auto smart = search_round(space, 0, **online, {}, points, 16, options, rng_a);
  auto blind = search_round(space, 0, **random, {}, points, 16, options, rng_b);
  ASSERT_TRUE(smart && blind);
  // Planted minimum 1e-4 s; random programs average several times that.
  EXPECT_LT(mean_planted(space, *smart), 0.6 * mean_planted(space, *blind))
      << mean_planted(space, *smart) << " vs " << mean_planted(space, *blind);
}

TEST(SearchTest, LineageOnlineFollowsAnInformativePriorBeforeLearning) {
  const Space space = matmul_space();
  const LineageScorer oracle = oracle_of(space);
  auto model = make_cost_model("lineage+online", oracle, 5);
  ASSERT_TRUE(model);
  SearchOptions options;
  options.population = 256;
  core::SplitMix64 rng(8);
  auto picks = search_round(space, 0, **model, {}, {}, 16, options, rng);
  ASSERT_TRUE(picks);
  // All but the ε share of random picks are near the planted minimum.
  std::vector<double> s;
  for (const Point& p : *picks) s.push_back(planted_seconds(space, p));
  std::sort(s.begin(), s.end());
  EXPECT_LE(s[s.size() / 2], 1.5e-4);
  EXPECT_EQ(make_cost_model("lineage", nullptr, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(make_cost_model("xgb", nullptr, 1).status().code(), StatusCode::kInvalidArgument);
}

// The mean Euclidean distance between the features of two picks.
double spread_of(const Space& space, const std::vector<Point>& picks) {
  double sum = 0;
  int pairs = 0;
  for (std::size_t i = 0; i < picks.size(); ++i) {
    const std::vector<float> a = space.features(picks[i]);
    for (std::size_t j = i + 1; j < picks.size(); ++j) {
      const std::vector<float> b = space.features(picks[j]);
      double d = 0;
      for (std::size_t k = 0; k < a.size(); ++k) d += (a[k] - b[k]) * (a[k] - b[k]);
      sum += std::sqrt(d);
      ++pairs;
    }
  }
  return sum / pairs;
}

TEST(SearchTest, ThePickRulesSpreadTheRoundAndFastStaysFast) {
  const Space space = matmul_space();
  const LineageScorer oracle = oracle_of(space);  // the top by score crowds near the minimum
  std::vector<Point> points;
  std::vector<double> seconds;
  measure_random(space, 16, 13, &points, &seconds);
  std::unordered_set<std::string> measured;
  for (const Point& p : points) measured.insert(space.key(p));
  const auto run = [&](PickRule rule, std::uint64_t seed) {
    auto model = make_cost_model("lineage", oracle, 5);
    EXPECT_TRUE(model);
    SearchOptions options;
    options.population = 256;
    options.epsilon = 0;  // the rule's picks alone
    options.pick = rule;
    core::SplitMix64 rng(seed);
    auto picks = search_round(space, 0, **model, measured, points, 16, options, rng);
    EXPECT_TRUE(picks) << picks.status().to_string();
    return picks ? *picks : std::vector<Point>{};
  };
  const auto keys = [&](const std::vector<Point>& picks) {
    std::vector<std::string> out;
    for (const Point& p : picks) out.push_back(space.key(p));
    return out;
  };
  const std::vector<Point> top = run(PickRule::kTop, 3), fast = run(PickRule::kFast, 3),
                           diverse = run(PickRule::kDiversity, 3);
  for (const auto* picks : {&top, &fast, &diverse}) {
    ASSERT_EQ(picks->size(), 16u);
    std::unordered_set<std::string> seen;
    for (const std::string& k : keys(*picks)) {
      EXPECT_FALSE(measured.contains(k));
      EXPECT_TRUE(seen.insert(k).second) << "a program picked twice";
    }
  }
  EXPECT_EQ(keys(fast), keys(run(PickRule::kFast, 3)));
  EXPECT_EQ(keys(diverse), keys(run(PickRule::kDiversity, 3)));
  EXPECT_NE(keys(fast), keys(top));
  EXPECT_GT(spread_of(space, diverse), spread_of(space, top));
  EXPECT_GT(spread_of(space, fast), spread_of(space, top));
  EXPECT_LT(mean_planted(space, fast), mean_planted(space, diverse));
  EXPECT_LE(mean_planted(space, top), mean_planted(space, fast));
}

TEST(SearchTest, PickRulesHaveNames) {
  for (PickRule rule : {PickRule::kTop, PickRule::kFast, PickRule::kDiversity})
    EXPECT_EQ(*pick_rule(pick_rule_name(rule)), rule);
  EXPECT_EQ(pick_rule("rdu").status().code(), StatusCode::kInvalidArgument);
}

TEST(SearchTest, AnOnlineModelRanksUnseenProgramsByThePlantedLatency) {
  const Space space = matmul_space();
  std::vector<Point> train, test;
  std::vector<double> train_s, test_s;
  measure_random(space, 128, 11, &train, &train_s);
  measure_random(space, 200, 12, &test, &test_s);
  auto model = make_cost_model("online", nullptr, 5);
  ASSERT_TRUE((*model)->learn(0, space, train, train_s));
  auto scores = (*model)->score(0, space, test);
  ASSERT_TRUE(scores);
  // Pairwise accuracy over pairs with different latencies: well above a coin's 0.5.
  int right = 0, pairs = 0;
  for (std::size_t i = 0; i < test.size(); ++i) {
    for (std::size_t j = i + 1; j < test.size(); ++j) {
      if (test_s[i] == test_s[j]) continue;
      ++pairs;
      right += ((*scores)[i] > (*scores)[j]) == (test_s[i] < test_s[j]);
    }
  }
  EXPECT_GT(static_cast<double>(right) / pairs, 0.8) << right << "/" << pairs;
}

}  // namespace
}  // namespace tcl::tuner
