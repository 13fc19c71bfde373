// tests/trainer/cost_model_test.cc — the torch-free facade, used the way
// api/ and the sampler will: plain buffers in, plain buffers out, Status.
// This file must not include torch.
#include "trainer/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace tcl::trainer {
namespace {

ModelConfig small_config() {
  ModelConfig c;
  c.token_dim = 6;
  c.descriptor_dim = 3;
  c.max_len = 10;
  c.d_model = 16;
  c.d_state = 4;
  c.film_hidden = 8;
  c.head_hidden = 8;
  return c;
}

struct Buffers {
  std::vector<float> tokens, descriptors;
  std::vector<int32_t> lengths;
  FeatureBatch batch(int64_t n, int64_t len) const { return FeatureBatch{n, len, tokens, lengths, descriptors}; }
};

Buffers make_buffers(int64_t n, int64_t len, const ModelConfig& c, bool shared_descriptor) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  Buffers b;
  b.tokens.resize(static_cast<size_t>(n * len * c.token_dim));
  for (float& x : b.tokens) x = normal(rng);
  b.descriptors.resize(static_cast<size_t>((shared_descriptor ? 1 : n) * c.descriptor_dim));
  for (float& x : b.descriptors) x = normal(rng);
  for (int64_t i = 0; i < n; ++i) b.lengths.push_back(static_cast<int32_t>(1 + i % len));
  return b;
}

TEST(CostModelTest, PredictEmbedSaveLoad) {
  const ModelConfig c = small_config();
  Result<std::unique_ptr<CostModel>> model = CostModel::create(c);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  EXPECT_GT((*model)->num_parameters(), 1000);

  const Buffers b = make_buffers(7, 10, c, false);
  std::vector<float> scores(7), again(7), embeddings(7 * 16);
  ASSERT_TRUE((*model)->predict(b.batch(7, 10), scores).is_ok());
  ASSERT_TRUE((*model)->embed(b.batch(7, 10), embeddings).is_ok());
  for (float s : scores) EXPECT_TRUE(std::isfinite(s));

  Result<std::string> bytes = (*model)->save();
  ASSERT_TRUE(bytes.is_ok());
  Result<std::unique_ptr<CostModel>> loaded = CostModel::load(*bytes);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ((*loaded)->config().d_model, 16);
  ASSERT_TRUE((*loaded)->predict(b.batch(7, 10), again).is_ok());
  EXPECT_EQ(scores, again);

  EXPECT_EQ(CostModel::load("garbage").status().code(), StatusCode::kDataLoss);
}

// interpolate_checkpoints: alpha 0 and 1 give back either end exactly, a
// mix lies between them, and a different architecture is refused.
TEST(CostModelTest, InterpolatedCheckpointsMixTheWeights) {
  ModelConfig c = small_config();
  c.seed = 1;
  auto a = CostModel::create(c);
  c.seed = 2;
  auto b = CostModel::create(c);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  const std::string bytes_a = *(*a)->save(), bytes_b = *(*b)->save();
  ASSERT_NE(bytes_a, bytes_b);
  const Buffers buf = make_buffers(5, 10, c, true);
  const auto scores_of = [&](const std::string& bytes) {
    auto m = CostModel::load(bytes);
    EXPECT_TRUE(m.is_ok()) << m.status().to_string();
    std::vector<float> s(5);
    EXPECT_TRUE((*m)->predict(buf.batch(5, 10), s).is_ok());
    return s;
  };
  auto zero = interpolate_checkpoints(bytes_a, bytes_b, 0.0);
  auto one = interpolate_checkpoints(bytes_a, bytes_b, 1.0);
  auto half = interpolate_checkpoints(bytes_a, bytes_b, 0.5);
  ASSERT_TRUE(zero.is_ok() && one.is_ok() && half.is_ok()) << zero.status().to_string();
  EXPECT_EQ(scores_of(*zero), scores_of(bytes_a));
  EXPECT_EQ(scores_of(*one), scores_of(bytes_b));
  EXPECT_NE(scores_of(*half), scores_of(bytes_a));
  EXPECT_NE(scores_of(*half), scores_of(bytes_b));
  // Halfway twice from a is a quarter of the way: weights mix linearly.
  auto quarter = interpolate_checkpoints(bytes_a, bytes_b, 0.25);
  auto half_of_half = interpolate_checkpoints(bytes_a, *half, 0.5);
  ASSERT_TRUE(quarter.is_ok() && half_of_half.is_ok());
  const std::vector<float> q = scores_of(*quarter), hh = scores_of(*half_of_half);
  for (std::size_t i = 0; i < q.size(); ++i) EXPECT_NEAR(q[i], hh[i], 1e-4);

  ModelConfig wider = c;
  wider.d_model = 32;
  auto w = CostModel::create(wider);
  ASSERT_TRUE(w.is_ok());
  EXPECT_EQ(interpolate_checkpoints(bytes_a, *(*w)->save(), 0.5).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(interpolate_checkpoints(bytes_a, bytes_b, NAN).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(interpolate_checkpoints("garbage", bytes_b, 0.5).status().code(), StatusCode::kDataLoss);
}

TEST(CostModelTest, SharedDescriptorEqualsRepeatedDescriptor) {
  const ModelConfig c = small_config();
  std::unique_ptr<CostModel> model = CostModel::create(c).value();
  Buffers shared = make_buffers(5, 8, c, true);
  Buffers repeated = shared;
  repeated.descriptors.clear();
  for (int i = 0; i < 5; ++i) {
    repeated.descriptors.insert(repeated.descriptors.end(), shared.descriptors.begin(), shared.descriptors.end());
  }
  std::vector<float> a(5), b(5);
  ASSERT_TRUE(model->predict(shared.batch(5, 8), a).is_ok());
  ASSERT_TRUE(model->predict(repeated.batch(5, 8), b).is_ok());
  EXPECT_EQ(a, b);
}

TEST(CostModelTest, McDropoutSamplesDiffer) {
  const ModelConfig c = small_config();
  std::unique_ptr<CostModel> model = CostModel::create(c).value();
  const Buffers b = make_buffers(4, 6, c, true);
  std::vector<float> samples(3 * 4);
  ASSERT_TRUE(model->predict_mc(b.batch(4, 6), 3, samples).is_ok());
  const std::vector<float> first(samples.begin(), samples.begin() + 4);
  const std::vector<float> second(samples.begin() + 4, samples.begin() + 8);
  EXPECT_NE(first, second);
}

TEST(CostModelTest, SizeMismatchesAreInvalidArgument) {
  const ModelConfig c = small_config();
  std::unique_ptr<CostModel> model = CostModel::create(c).value();
  Buffers b = make_buffers(4, 6, c, false);
  std::vector<float> scores(4), wrong(3);
  EXPECT_EQ(model->predict(b.batch(4, 6), wrong).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(model->predict(b.batch(4, 5), scores).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(model->predict(b.batch(4, 11), scores).code(), StatusCode::kInvalidArgument);
  b.lengths[2] = 7;  // longer than seq_len
  EXPECT_EQ(model->predict(b.batch(4, 6), scores).code(), StatusCode::kInvalidArgument);
  ModelConfig bad = c;
  bad.d_model = 0;
  EXPECT_EQ(CostModel::create(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST(CostModelTest, EmptyBatchIsFine) {
  const ModelConfig c = small_config();
  std::unique_ptr<CostModel> model = CostModel::create(c).value();
  const Buffers b = make_buffers(0, 4, c, true);
  std::vector<float> scores;
  EXPECT_TRUE(model->predict(b.batch(0, 4), scores).is_ok());
}

}  // namespace
}  // namespace tcl::trainer
