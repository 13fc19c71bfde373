// tests/trainer/pool_embedding_test.cc — what the RDU sampler gets from a
// model version (trainer/pool_embedding.h): embeddings equal to the model's
// own embed() in add order across passes, the uncertainty terms each checked
// against a plain computation from the model's scores (MC dropout spread, the
// disagreement between platform conditionings, the distance to a reference
// model), determinism for a seed, and the misuse errors.
#include "trainer/pool_embedding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/features.h"
#include "core/record.h"
#include "tests/lib/shared_data.h"
#include "trainer/cost_model.h"
#include "trainer/fast_inference.h"

namespace tcl::trainer {
namespace {

std::unique_ptr<CostModel> make_model(std::uint64_t seed) {
  ModelConfig c;
  c.token_dim = core::kTokenDim;
  c.descriptor_dim = core::kHardwareDim;
  c.seed = seed;
  auto m = CostModel::create(c);
  EXPECT_TRUE(m) << m.status().to_string();
  return m ? std::move(*m) : nullptr;
}

std::vector<float> descriptor(float scale) {
  std::vector<float> d(core::kHardwareDim);
  for (int i = 0; i < core::kHardwareDim; ++i) d[static_cast<std::size_t>(i)] = scale * static_cast<float>(i % 5);
  return d;
}

// The step sequences of the first `n` real records of x86-16c.
const std::vector<std::vector<core::Step>>& programs() {
  static const std::vector<std::vector<core::Step>> all = [] {
    std::vector<std::vector<core::Step>> out;
    core::RecordParser parser;
    for (const std::string& line : tcl::testing::shared_data_lines("x86-16c", 1100)) {
      auto r = parser.parse(line);
      if (r) out.push_back(r->steps);
    }
    return out;
  }();
  return all;
}

// The plain way: one batch of programs [first, first + n) padded to their own
// longest, through `fn` (embed or predict) of the model.
struct Batch {
  std::vector<float> tokens;
  std::vector<int32_t> lengths;
  FeatureBatch view;
};
std::unique_ptr<Batch> batch_of(const CostModel& m, std::size_t first, std::size_t n, const std::vector<float>& desc) {
  auto b = std::make_unique<Batch>();
  int L = 1;
  for (std::size_t i = first; i < first + n; ++i) {
    L = std::max<int>(L, static_cast<int>(std::min<int64_t>(programs()[i].size(), m.config().max_len)));
  }
  b->tokens.assign(n * static_cast<std::size_t>(L) * core::kTokenDim, 0.0f);
  b->lengths.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    b->lengths[i] = core::encode_tokens(programs()[first + i], L, b->tokens.data() + i * L * core::kTokenDim);
  }
  b->view = FeatureBatch{static_cast<int64_t>(n), L, b->tokens, b->lengths, desc};
  return b;
}

std::vector<float> scores(const CostModel& m, std::size_t n, const std::vector<float>& desc) {
  auto b = batch_of(m, 0, n, desc);
  std::vector<float> out(n);
  EXPECT_TRUE(m.predict(b->view, out).is_ok());
  return out;
}

// Embeds programs [0, n) with uncertainty; returns {embeddings, uncertainty}.
std::pair<std::vector<float>, std::vector<float>> run(PoolEmbedder& e, std::size_t n, bool uncertainty = true) {
  for (std::size_t i = 0; i < n; ++i) EXPECT_TRUE(e.add(programs()[i], uncertainty).is_ok());
  EXPECT_TRUE(e.flush().is_ok());
  std::vector<float> emb, u;
  e.take(&emb, &u);
  return {emb, u};
}

TEST(PoolEmbeddingTest, EmbeddingsAreTheModelsInAddOrderAcrossPasses) {
  auto model = make_model(1);
  ASSERT_NE(model, nullptr);
  ASSERT_GE(programs().size(), PoolEmbedder::kPass + 20);
  const std::vector<float> desc = descriptor(0.1f);
  PoolEmbedder e({model.get(), nullptr}, desc, {}, {});
  EXPECT_EQ(e.dim(), 64);
  const std::size_t n = PoolEmbedder::kPass + 20;  // two passes
  for (std::size_t i = 0; i < n; ++i) ASSERT_TRUE(e.add(programs()[i], false).is_ok());
  EXPECT_EQ(e.embeddings().size(), PoolEmbedder::kPass * 64);  // the first pass ran on its own
  ASSERT_TRUE(e.flush().is_ok());
  ASSERT_EQ(e.embeddings().size(), n * 64);
  EXPECT_TRUE(e.uncertainty().empty());

  // The reference: each pass's programs embedded in one plain call.
  for (auto [first, count] : {std::pair<std::size_t, std::size_t>{0, PoolEmbedder::kPass}, {PoolEmbedder::kPass, 20}}) {
    auto b = batch_of(*model, first, count, desc);
    std::vector<float> want(count * 64);
    ASSERT_TRUE(model->embed(b->view, want).is_ok());
    for (std::size_t k = 0; k < want.size(); ++k) {
      ASSERT_FLOAT_EQ(e.embeddings()[first * 64 + k], want[k]) << "program " << first + k / 64;
    }
  }
}

TEST(PoolEmbeddingTest, TheFastPathGivesTheSameEmbeddings) {
  auto model = make_model(2);
  ASSERT_NE(model, nullptr);
  auto fast = StudentInference::create(*model);
  ASSERT_TRUE(fast) << fast.status().to_string();
  const std::vector<float> desc = descriptor(0.1f);
  PoolEmbedder slow_e({model.get(), nullptr}, desc, {}, {});
  PoolEmbedder fast_e({model.get(), fast->get()}, desc, {}, {});
  const auto [slow_emb, slow_u] = run(slow_e, 50);
  const auto [fast_emb, fast_u] = run(fast_e, 50);
  ASSERT_EQ(fast_emb.size(), slow_emb.size());
  for (std::size_t k = 0; k < slow_emb.size(); ++k) ASSERT_NEAR(fast_emb[k], slow_emb[k], 1e-4);
  ASSERT_EQ(fast_u.size(), 50u);
  for (float u : fast_u) EXPECT_GT(u, 0.0f);  // dropout 0.1: MC scores spread
}

TEST(PoolEmbeddingTest, McUncertaintyIsDeterministicForASeedAndPositive) {
  auto model = make_model(3);
  ASSERT_NE(model, nullptr);
  auto fast = StudentInference::create(*model);
  ASSERT_TRUE(fast);
  const std::vector<float> desc = descriptor(0.1f);
  PoolEmbeddingOptions seed7;
  seed7.seed = 7;
  PoolEmbeddingOptions seed8;
  seed8.seed = 8;
  PoolEmbedder a({model.get(), fast->get()}, desc, {}, seed7), b({model.get(), fast->get()}, desc, {}, seed7),
      c({model.get(), fast->get()}, desc, {}, seed8);
  const auto ua = run(a, 40).second, ub = run(b, 40).second, uc = run(c, 40).second;
  ASSERT_EQ(ua.size(), 40u);
  EXPECT_EQ(ua, ub);
  EXPECT_NE(ua, uc);
  for (float u : ua) EXPECT_TRUE(std::isfinite(u) && u > 0.0f);
}

// predicted() is the model's plain score, one per program with uncertainty,
// in add order across passes; taken with the rest.
TEST(PoolEmbeddingTest, PredictedIsThePlainScoreInAddOrder) {
  auto model = make_model(3);
  ASSERT_NE(model, nullptr);
  auto fast = StudentInference::create(*model);
  ASSERT_TRUE(fast);
  const std::vector<float> desc = descriptor(0.1f);
  PoolEmbedder e({model.get(), fast->get()}, desc, {}, {});
  const std::size_t n = PoolEmbedder::kPass + 20;  // two passes
  for (std::size_t i = 0; i < n; ++i) ASSERT_TRUE(e.add(programs()[i], true).is_ok());
  ASSERT_TRUE(e.flush().is_ok());
  std::vector<float> emb, u, predicted;
  e.take(&emb, &u, &predicted);
  ASSERT_EQ(predicted.size(), n);
  EXPECT_TRUE(e.predicted().empty());  // taken
  const std::vector<float> plain = scores(*model, n, desc);
  for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(predicted[i], plain[i], 1e-4) << i;
}

// With the same MC seed, the only difference `others` makes is the standard
// deviation of the scores under this platform's and the others' descriptors.
TEST(PoolEmbeddingTest, OtherPlatformsAddTheSpreadOfTheirScores) {
  auto model = make_model(4);
  ASSERT_NE(model, nullptr);
  auto fast = StudentInference::create(*model);
  ASSERT_TRUE(fast);
  const std::vector<float> mine = descriptor(0.1f), other1 = descriptor(5.0f), other2 = descriptor(-3.0f);
  const std::size_t n = 30;
  PoolEmbedder plain({model.get(), fast->get()}, mine, {}, {});
  PoolEmbedder with({model.get(), fast->get()}, mine, {other1, other2}, {});
  const auto u0 = run(plain, n).second, u1 = run(with, n).second;
  const auto s0 = scores(*model, n, mine), s1 = scores(*model, n, other1), s2 = scores(*model, n, other2);
  ASSERT_EQ(u1.size(), n);
  double largest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double m = (double(s0[i]) + s1[i] + s2[i]) / 3;
    const double var = (double(s0[i]) * s0[i] + double(s1[i]) * s1[i] + double(s2[i]) * s2[i]) / 3 - m * m;
    const double spread = std::sqrt(std::max(0.0, var));
    largest = std::max(largest, spread);
    EXPECT_NEAR(u1[i] - u0[i], spread, 1e-5) << "program " << i;
  }
  EXPECT_GT(largest, 1e-4);  // the descriptors really do condition the scores (the tolerance is far below)
}

TEST(PoolEmbeddingTest, AReferenceModelAddsTheDistanceOfItsScores) {
  auto model = make_model(5);
  auto reference = make_model(6);
  ASSERT_TRUE(model && reference);
  auto fast = StudentInference::create(*model);
  ASSERT_TRUE(fast);
  const std::vector<float> desc = descriptor(0.1f);
  const std::size_t n = 30;
  PoolEmbedder plain({model.get(), fast->get()}, desc, {}, {});
  PoolEmbedder with({model.get(), fast->get()}, desc, {}, {}, {reference.get(), nullptr});
  const auto u0 = run(plain, n).second, u1 = run(with, n).second;
  const auto own = scores(*model, n, desc), ref = scores(*reference, n, desc);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_NEAR(u1[i] - u0[i], std::fabs(double(own[i]) - ref[i]), 1e-4) << "program " << i;
  }
}

TEST(PoolEmbeddingTest, MixingWithAndWithoutUncertaintyNeedsAFlush) {
  auto model = make_model(7);
  ASSERT_NE(model, nullptr);
  PoolEmbedder e({model.get(), nullptr}, descriptor(0.1f), {}, {});
  ASSERT_TRUE(e.add(programs()[0], true).is_ok());
  EXPECT_EQ(e.add(programs()[1], false).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(e.flush().is_ok());
  ASSERT_TRUE(e.add(programs()[1], false).is_ok());  // after a flush: fine
  ASSERT_TRUE(e.flush().is_ok());
  EXPECT_EQ(e.embeddings().size(), 2u * 64);
  EXPECT_EQ(e.uncertainty().size(), 1u);  // only the first was queued with it

  std::vector<float> emb, u;
  e.take(&emb, &u);
  EXPECT_EQ(emb.size(), 2u * 64);
  EXPECT_TRUE(e.embeddings().empty());
  EXPECT_TRUE(e.uncertainty().empty());
}

TEST(PoolEmbeddingTest, FewerThanTwoMcSamplesIsInvalid) {
  auto model = make_model(8);
  ASSERT_NE(model, nullptr);
  PoolEmbeddingOptions one;
  one.mc_samples = 1;
  PoolEmbedder e({model.get(), nullptr}, descriptor(0.1f), {}, one);
  ASSERT_TRUE(e.add(programs()[0], true).is_ok());
  EXPECT_EQ(e.flush().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(e.embeddings().empty());
}

}  // namespace
}  // namespace tcl::trainer
