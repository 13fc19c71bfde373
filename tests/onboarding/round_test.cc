// tests/onboarding/round_test.cc — one sample-request round (onboarding/round.h)
// against the code it replaced: trainer::PoolEmbedder and sampler::select
// wired by hand, as api/handlers/sample_requests.cc and bench_onboarding did
// before issue 20. Real records (gpu-2080ti), small untrained students.
#include "onboarding/round.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/features.h"
#include "core/line_reader.h"
#include "trainer/cost_model.h"

namespace tcl::onboarding {
namespace {

struct Program {
  std::int32_t task;
  std::vector<core::Step> steps;
};

// The first `n` records of a platform's file, tasks numbered by first appearance.
std::vector<Program> programs(std::size_t n, std::int32_t* num_tasks) {
  const std::string path = std::string(TCL_SOURCE_DIR) + "/../shared/data/gpu-2080ti/records.jsonl.gz";
  auto reader = core::LineReader::open(path);
  EXPECT_TRUE(reader.is_ok()) << path << " (expected ../shared/data next to the repository)";
  std::vector<Program> out;
  if (!reader) return out;
  core::RecordParser parser;
  core::Record r;
  std::unordered_map<std::string, std::int32_t> tasks;
  std::string_view line;
  while (out.size() < n && (*reader)->next(&line)) {
    if (core::is_skippable_line(line) || !parser.parse(line, &r).is_ok()) continue;
    auto [it, added] = tasks.try_emplace(r.workload_key, static_cast<std::int32_t>(tasks.size()));
    out.push_back(Program{it->second, r.steps});
  }
  *num_tasks = static_cast<std::int32_t>(tasks.size());
  return out;
}

std::unique_ptr<trainer::CostModel> student(std::uint64_t seed) {
  trainer::ModelConfig c;
  c.token_dim = core::kTokenDim;
  c.descriptor_dim = core::kHardwareDim;
  c.d_model = 16;
  c.d_state = 4;
  c.film_hidden = 8;
  c.head_hidden = 8;
  c.seed = seed;
  return trainer::CostModel::create(c).value();
}

std::vector<float> descriptor(float x) { return std::vector<float>(core::kHardwareDim, x); }

void expect_same_picks(const std::vector<sampler::Pick>& a, const std::vector<sampler::Pick>& b) {
  ASSERT_EQ(a.size(), b.size());
  const auto same = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].index, b[i].index) << i;
    EXPECT_EQ(a[i].task, b[i].task) << i;
    EXPECT_TRUE(same(a[i].r, b[i].r) && same(a[i].d, b[i].d) && same(a[i].u, b[i].u) && same(a[i].score, b[i].score))
        << i;
  }
}

TEST(OnboardingRoundTest, WithAColumnAndMeasuredProgramsItIsTheEmbedderAndTheSamplerWiredAsBefore) {
  std::int32_t num_tasks = 0;
  const std::vector<Program> all = programs(400, &num_tasks);
  ASSERT_GE(all.size(), 300u);
  const std::span<const Program> candidates(all.data(), 300), measured(all.data() + 300, all.size() - 300);
  auto s = student(1), column = student(2);
  const trainer::ServedModel served_student{s.get(), nullptr}, served_column{column.get(), nullptr};
  const std::vector<std::vector<float>> others = {descriptor(0.25f)};
  const trainer::PoolEmbeddingOptions embedding{4, 7};

  // The round.
  RoundModels models{served_student, served_column, descriptor(0.5f), others};
  RoundPool pool(models, embedding);
  for (const Program& p : candidates) ASSERT_TRUE(pool.add_candidate(p.task, p.steps).is_ok());
  for (const Program& p : measured) ASSERT_TRUE(pool.add_measured(p.task, p.steps).is_ok());
  ASSERT_TRUE(pool.finish(num_tasks).is_ok());
  EXPECT_TRUE(pool.embedded());
  EXPECT_EQ(pool.size(), 300);
  RoundOptions options;
  options.strategy = sampler::Strategy::kRdu;  // the weights' greedy (a request's default is fast)
  options.seed = 3;
  options.weights = {0.5, 1, 1};
  auto picks = select_round(pool, 30, options);
  ASSERT_TRUE(picks.is_ok()) << picks.status().to_string();

  // By hand: the column scores, the student is its reference. Fresh copies
  // of both models: MC dropout draws from a model's own generator.
  auto s2 = student(1), column2 = student(2);
  const std::vector<float> own = descriptor(0.5f);
  trainer::PoolEmbedder embedder(trainer::ServedModel{column2.get(), nullptr}, own, others, embedding,
                                 trainer::ServedModel{s2.get(), nullptr});
  std::vector<std::int32_t> task, measured_task;
  for (const Program& p : candidates) {
    task.push_back(p.task);
    ASSERT_TRUE(embedder.add(p.steps, true).is_ok());
  }
  ASSERT_TRUE(embedder.flush().is_ok());
  std::vector<float> emb, unc, memb, unused;
  embedder.take(&emb, &unc);
  for (const Program& p : measured) {
    measured_task.push_back(p.task);
    ASSERT_TRUE(embedder.add(p.steps, false).is_ok());
  }
  ASSERT_TRUE(embedder.flush().is_ok());
  embedder.take(&memb, &unused);
  sampler::Pool ref;
  ref.count = 300;
  ref.dim = embedder.dim();
  ref.embeddings = emb;
  ref.uncertainty = unc;
  ref.task = task;
  ref.num_tasks = num_tasks;
  ref.measured_count = static_cast<std::int64_t>(measured_task.size());
  ref.measured_embeddings = memb;
  ref.measured_task = measured_task;
  sampler::SampleOptions so;
  so.budget = 30;
  so.seed = 3;
  so.weights = {0.5, 1, 1};
  auto expected = sampler::select(ref, so);
  ASSERT_TRUE(expected.is_ok());
  expect_same_picks(*picks, *expected);
  EXPECT_EQ(pool.dim(), embedder.dim());
}

TEST(OnboardingRoundTest, WithoutAColumnTheStudentScoresAlone) {
  std::int32_t num_tasks = 0;
  const std::vector<Program> all = programs(200, &num_tasks);
  auto s = student(1), s2 = student(1);  // one per path: MC dropout draws from a model's own generator
  RoundPool pool(RoundModels{{s.get(), nullptr}, {}, descriptor(0.5f), {}}, trainer::PoolEmbeddingOptions{4, 7});
  trainer::PoolEmbedder embedder(trainer::ServedModel{s2.get(), nullptr}, descriptor(0.5f), {},
                                 trainer::PoolEmbeddingOptions{4, 7});
  std::vector<std::int32_t> task;
  for (const Program& p : all) {
    ASSERT_TRUE(pool.add_candidate(p.task, p.steps).is_ok());
    ASSERT_TRUE(embedder.add(p.steps, true).is_ok());
    task.push_back(p.task);
  }
  ASSERT_TRUE(pool.finish(num_tasks).is_ok());
  ASSERT_TRUE(embedder.flush().is_ok());
  sampler::Pool ref;
  ref.count = static_cast<std::int64_t>(all.size());
  ref.dim = embedder.dim();
  ref.embeddings = embedder.embeddings();
  ref.uncertainty = embedder.uncertainty();
  ref.task = task;
  ref.num_tasks = num_tasks;
  for (sampler::Strategy st : {sampler::Strategy::kRdu, sampler::Strategy::kU, sampler::Strategy::kRandom}) {
    RoundOptions o;
    o.strategy = st;
    sampler::SampleOptions so;
    so.strategy = st;
    so.budget = 20;
    auto picks = select_round(pool, 20, o);
    auto expected = sampler::select(ref, so);
    ASSERT_TRUE(picks.is_ok() && expected.is_ok());
    expect_same_picks(*picks, *expected);
  }
}

TEST(OnboardingRoundTest, RandomNeedsNoModelAndRandomShareReachesTheSampler) {
  std::int32_t num_tasks = 0;
  const std::vector<Program> all = programs(200, &num_tasks);
  RoundPool random_pool(RoundModels{}, trainer::PoolEmbeddingOptions{});
  for (const Program& p : all) ASSERT_TRUE(random_pool.add_candidate(p.task, p.steps).is_ok());
  ASSERT_TRUE(random_pool.add_measured(all[0].task, all[0].steps).is_ok());  // ignored without a model
  ASSERT_TRUE(random_pool.finish(num_tasks).is_ok());
  EXPECT_FALSE(random_pool.embedded());
  EXPECT_EQ(random_pool.dim(), 1);
  RoundOptions random;
  random.strategy = sampler::Strategy::kRandom;
  random.seed = 9;
  auto drawn = select_round(random_pool, 25, random);
  ASSERT_TRUE(drawn.is_ok()) << drawn.status().to_string();
  ASSERT_EQ(drawn->size(), 25u);

  // rdu with random_share 1 takes random's picks (sampler::SampleOptions::random_share).
  auto s = student(1);
  RoundPool pool(RoundModels{{s.get(), nullptr}, {}, descriptor(0.5f), {}}, trainer::PoolEmbeddingOptions{4, 7});
  for (const Program& p : all) ASSERT_TRUE(pool.add_candidate(p.task, p.steps).is_ok());
  ASSERT_TRUE(pool.finish(num_tasks).is_ok());
  RoundOptions greedy;
  greedy.strategy = sampler::Strategy::kRdu;
  greedy.seed = 9;
  RoundOptions shared = greedy;
  shared.random_share = 1.0;
  auto g = select_round(pool, 25, greedy), r = select_round(pool, 25, shared);
  ASSERT_TRUE(g.is_ok() && r.is_ok());
  const auto indices = [](const std::vector<sampler::Pick>& picks) {
    std::vector<std::int64_t> out;
    for (const auto& p : picks) out.push_back(p.index);
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(indices(*r), indices(*drawn));
  EXPECT_NE(indices(*g), indices(*drawn));
}

TEST(OnboardingRoundTest, BadRoundsAreRefused) {
  std::int32_t num_tasks = 0;
  const std::vector<Program> all = programs(20, &num_tasks);
  auto s = student(1);
  RoundPool pool(RoundModels{{s.get(), nullptr}, {}, descriptor(0.5f), {}}, trainer::PoolEmbeddingOptions{4, 7});
  ASSERT_TRUE(pool.add_candidate(all[0].task, all[0].steps).is_ok());
  ASSERT_TRUE(pool.add_measured(all[1].task, all[1].steps).is_ok());
  EXPECT_FALSE(pool.add_candidate(all[2].task, all[2].steps).is_ok());  // candidates come first
  ASSERT_TRUE(pool.finish(num_tasks).is_ok());
  EXPECT_EQ(select_round(pool, 2, RoundOptions{}).status().code(), StatusCode::kInvalidArgument);  // budget > pool
}

TEST(OnboardingRoundTest, BudgetOfAFractionIsItsCeilingAndAtLeastOne) {
  EXPECT_EQ(budget_of_fraction(0.1, 1000), 100);
  EXPECT_EQ(budget_of_fraction(0.1, 1001), 101);
  EXPECT_EQ(budget_of_fraction(0.001, 10), 1);
  EXPECT_EQ(budget_of_fraction(1.0, 7), 7);
}

}  // namespace
}  // namespace tcl::onboarding
