// tests/trainer/fast_inference_test.cc — the inference fast path against the
// torch forward (the reference, as test-backend-ops checks every backend
// against the CPU): scores and embeddings on real-shaped inputs (core's
// token and descriptor widths, lengths from 0 to max_len, garbage in the
// padding), several seeds, shared and per-program descriptors including the
// real platforms', every SIMD level this CPU has, and an odd-sized config
// that exercises the padding. Then determinism across threads and chunking,
// concurrent const calls, and input checks.
#include "trainer/fast_inference.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "core/features.h"
#include "core/record.h"
#include "trainer/cost_model.h"
#include "trainer/model_config.h"
#include "trainer/score_model.h"

namespace tcl::trainer {
namespace {

// The default student on core's real feature widths.
ModelConfig real_config(uint64_t seed) {
  ModelConfig c;
  c.token_dim = core::kTokenDim;
  c.descriptor_dim = core::kHardwareDim;
  c.max_len = core::kDefaultMaxSteps;
  c.seed = seed;
  return c;
}

// No width a multiple of 16, three layers, a narrower conv.
ModelConfig odd_config(uint64_t seed) {
  ModelConfig c;
  c.token_dim = 9;
  c.descriptor_dim = 5;
  c.max_len = 20;
  c.d_model = 24;
  c.n_layers = 3;
  c.d_state = 5;
  c.expand = 3;
  c.d_conv = 3;
  c.dt_rank = 3;
  c.film_hidden = 10;
  c.head_hidden = 7;
  c.seed = seed;
  return c;
}

// A model whose weights are moved off their initialisation (film_out starts
// at ~0 and A_log equal across channels, which would hide mistakes in the
// conditioning and the state layout).
std::shared_ptr<ScoreModel> make_model(const ModelConfig& c) {
  Result<std::shared_ptr<ScoreModel>> m = make_score_model(c);
  EXPECT_TRUE(m.is_ok()) << m.status().to_string();
  std::shared_ptr<ScoreModel> model = *m;
  torch::manual_seed(c.seed + 100);
  torch::NoGradGuard no_grad;
  for (auto& p : model->parameters()) p.add_(0.1 * torch::randn_like(p));
  model->eval();
  return model;
}

// Token-like rows (a one-hot step kind, some slots in [0, 2], a little
// noise); rows past each length hold large garbage. Lengths cover 0, 1, L
// and random values.
struct Batch {
  int64_t n = 0, L = 0;
  std::vector<float> tokens, descriptors;  // descriptors: n rows
  std::vector<int32_t> lengths;
};

Batch make_batch(int64_t n, int64_t L, const ModelConfig& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::normal_distribution<float> normal;
  Batch b;
  b.n = n;
  b.L = L;
  b.tokens.resize(static_cast<size_t>(n * L * c.token_dim));
  b.lengths.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int32_t len = static_cast<int32_t>(rng() % static_cast<uint32_t>(L + 1));
    if (i % 7 == 0) len = 0;
    if (i % 7 == 1) len = static_cast<int32_t>(L);
    if (i % 7 == 2) len = 1;
    b.lengths[static_cast<size_t>(i)] = len;
    for (int64_t t = 0; t < L; ++t) {
      float* row = b.tokens.data() + (i * L + t) * c.token_dim;
      if (t >= len) {
        for (int64_t k = 0; k < c.token_dim; ++k) row[k] = 100.0f * normal(rng);
        continue;
      }
      for (int64_t k = 0; k < c.token_dim; ++k) row[k] = 0.05f * normal(rng);
      row[rng() % std::min<int64_t>(15, c.token_dim)] = 1.0f;
      for (int k = 0; k < 6; ++k) row[rng() % c.token_dim] = 2.0f * unit(rng);
    }
  }
  b.descriptors.resize(static_cast<size_t>(n * c.descriptor_dim));
  for (float& x : b.descriptors) x = unit(rng);
  return b;
}

// The descriptors of the three shared-data platforms (core's encoding).
std::vector<std::vector<float>> platform_descriptors() {
  std::vector<std::vector<float>> out;
  const auto add = [&out](std::vector<int64_t> hw, const char* target) {
    core::HardwareParams p{hw[0], hw[1], hw[2], hw[3], hw[4], hw[5], hw[6], hw[7]};
    std::vector<float> d(core::kHardwareDim);
    core::encode_hardware(p, target, d.data());
    out.push_back(d);
  };
  add({24, 64, 64, 0, 0, 0, 0, 0}, "llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu");
  add({16, 64, 64, 0, 0, 0, 0, 0}, "llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu");
  add({-1, 16, 64, 49152, 2147483647, 1024, 8, 32},
      "cuda -keys=cuda,gpu -arch=sm_75 -max_num_threads=1024 -model=2080ti -thread_warp_size=32");
  return out;
}

FeatureBatch view(const Batch& b, std::span<const float> descriptors) {
  return FeatureBatch{b.n, b.L, b.tokens, b.lengths, descriptors};
}

// The torch forward in eval mode; descriptors has n rows or one.
void torch_reference(ScoreModel& model, const Batch& b, std::span<const float> descriptors, std::vector<float>* scores,
                     std::vector<float>* embeddings) {
  const ModelConfig& c = model.config();
  torch::NoGradGuard no_grad;
  const torch::Tensor tokens = torch::from_blob(const_cast<float*>(b.tokens.data()), {b.n, b.L, c.token_dim}).clone();
  const torch::Tensor lengths =
      torch::from_blob(const_cast<int32_t*>(b.lengths.data()), {b.n}, torch::kInt).to(torch::kLong);
  const int64_t rows = static_cast<int64_t>(descriptors.size()) / c.descriptor_dim;
  torch::Tensor desc = torch::from_blob(const_cast<float*>(descriptors.data()), {rows, c.descriptor_dim})
                           .expand({b.n, c.descriptor_dim})
                           .contiguous();
  const torch::Tensor s = model.forward(tokens, lengths, desc).contiguous();
  const torch::Tensor e = model.embed(tokens, lengths, desc).contiguous();
  scores->assign(s.data_ptr<float>(), s.data_ptr<float>() + s.numel());
  embeddings->assign(e.data_ptr<float>(), e.data_ptr<float>() + e.numel());
}

// max |a - b| / max(max |b|, 1e-3): the error relative to the output's scale.
double scaled_error(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0, scale = 1e-3;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    EXPECT_TRUE(std::isfinite(a[i])) << i;
    diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return diff / scale;
}

std::vector<SimdLevel> supported_levels() {
  std::vector<SimdLevel> out;
  for (SimdLevel l : {SimdLevel::kBaseline, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (simd_level_supported(l)) out.push_back(l);
  }
  return out;
}

std::unique_ptr<StudentInference> make_fast(const ScoreModel& model, SimdLevel simd, int32_t threads = 2,
                                            int32_t chunk_tokens = 384) {
  InferenceOptions o;
  o.simd = simd;
  o.threads = threads;
  o.chunk_tokens = chunk_tokens;
  Result<std::unique_ptr<StudentInference>> f = StudentInference::create(model, o);
  EXPECT_TRUE(f.is_ok()) << f.status().to_string();
  return f.is_ok() ? std::move(*f) : nullptr;
}

// Fast path vs torch for every SIMD level, per-program and shared
// descriptors; returns the worst scaled error seen.
double compare_with_torch(const ModelConfig& c, int64_t n, uint32_t data_seed,
                          const std::vector<std::vector<float>>& shared_descriptors) {
  auto model = make_model(c);
  const Batch b = make_batch(n, c.max_len, c, data_seed);
  std::vector<std::vector<float>> descriptor_sets{b.descriptors};
  for (const auto& d : shared_descriptors) descriptor_sets.push_back(d);
  double worst = 0;
  for (const auto& descriptors : descriptor_sets) {
    std::vector<float> ref_scores, ref_emb;
    torch_reference(*model, b, descriptors, &ref_scores, &ref_emb);
    for (SimdLevel level : supported_levels()) {
      auto fast = make_fast(*model, level);
      if (fast == nullptr) return 1.0;
      std::vector<float> scores(static_cast<size_t>(n)), emb(static_cast<size_t>(n * c.d_model));
      EXPECT_TRUE(fast->predict(view(b, descriptors), scores).is_ok());
      EXPECT_TRUE(fast->embed(view(b, descriptors), emb).is_ok());
      const double es = scaled_error(scores, ref_scores), ee = scaled_error(emb, ref_emb);
      EXPECT_LT(es, 1e-4) << simd_level_name(level) << " scores, seed " << c.seed;
      EXPECT_LT(ee, 1e-4) << simd_level_name(level) << " embeddings, seed " << c.seed;
      worst = std::max({worst, es, ee});
    }
  }
  return worst;
}

TEST(FastInferenceTest, MatchesTorchOnRealShapesSeedsAndDescriptors) {
  double worst = 0;
  for (uint64_t seed : {1, 2, 3}) {
    worst =
        std::max(worst, compare_with_torch(real_config(seed), 40, static_cast<uint32_t>(seed), platform_descriptors()));
  }
  std::printf("[ fast ] default student: worst scaled error vs torch %.2e\n", worst);
}

TEST(FastInferenceTest, MatchesTorchOnAnOddSizedConfig) {
  double worst = 0;
  for (uint64_t seed : {4, 5}) {
    std::vector<float> one(5);
    for (size_t k = 0; k < one.size(); ++k) one[k] = 0.3f * static_cast<float>(k);
    worst = std::max(worst, compare_with_torch(odd_config(seed), 30, static_cast<uint32_t>(seed), {one}));
  }
  std::printf("[ fast ] odd config: worst scaled error vs torch %.2e\n", worst);
}

TEST(FastInferenceTest, ResultsDoNotDependOnThreadsChunkingOrBatch) {
  const ModelConfig c = real_config(9);
  auto model = make_model(c);
  const Batch b = make_batch(37, c.max_len, c, 9);
  const SimdLevel level = supported_levels().back();
  std::vector<float> ref(37);
  ASSERT_TRUE(make_fast(*model, level, 1)->predict(view(b, b.descriptors), ref).is_ok());
  for (int32_t threads : {1, 3}) {
    for (int32_t chunk : {1, 50, 384, 100000}) {
      std::vector<float> got(37);
      ASSERT_TRUE(make_fast(*model, level, threads, chunk)->predict(view(b, b.descriptors), got).is_ok());
      EXPECT_EQ(got, ref) << threads << " threads, chunk " << chunk;
    }
  }
  // One program at a time.
  auto fast = make_fast(*model, level, 2);
  for (int64_t i = 0; i < b.n; ++i) {
    const int64_t row = b.L * c.token_dim;
    const FeatureBatch one{1, b.L, std::span<const float>(b.tokens).subspan(i * row, row),
                           std::span<const int32_t>(b.lengths).subspan(i, 1),
                           std::span<const float>(b.descriptors).subspan(i * c.descriptor_dim, c.descriptor_dim)};
    float score = 0;
    ASSERT_TRUE(fast->predict(one, std::span<float>(&score, 1)).is_ok());
    EXPECT_EQ(score, ref[static_cast<size_t>(i)]) << i;
  }
}

TEST(FastInferenceTest, ConcurrentCallsAgree) {
  const ModelConfig c = real_config(10);
  auto model = make_model(c);
  const Batch b = make_batch(64, c.max_len, c, 10);
  auto fast = make_fast(*model, SimdLevel::kAuto, 2, 64);
  std::vector<float> ref(64), ref_emb(static_cast<size_t>(64 * c.d_model));
  ASSERT_TRUE(fast->predict(view(b, b.descriptors), ref).is_ok());
  ASSERT_TRUE(fast->embed(view(b, b.descriptors), ref_emb).is_ok());
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> callers;
  for (int k = 0; k < 4; ++k) {
    callers.emplace_back([&, k] {
      for (int rep = 0; rep < 5; ++rep) {
        std::vector<float> got(64), emb(ref_emb.size());
        if (!fast->predict(view(b, b.descriptors), got).is_ok() || got != ref) ++mismatches[k];
        if (!fast->embed(view(b, b.descriptors), emb).is_ok() || emb != ref_emb) ++mismatches[k];
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int k = 0; k < 4; ++k) EXPECT_EQ(mismatches[k], 0) << k;
}

#if defined(__x86_64__)
TEST(FastInferenceTest, LeavesTheCallersFloatingPointModeAlone) {
  const ModelConfig c = odd_config(13);
  auto model = make_model(c);
  auto fast = make_fast(*model, SimdLevel::kAuto, 1);
  const Batch b = make_batch(5, 20, c, 13);
  std::vector<float> scores(5);
  const unsigned before = _mm_getcsr();
  ASSERT_TRUE(fast->predict(view(b, b.descriptors), scores).is_ok());
  EXPECT_EQ(_mm_getcsr(), before);  // the flush-to-zero mode is restored
}
#endif

TEST(FastInferenceTest, AgreesWithTheCostModelFacade) {
  ModelConfig c = odd_config(11);
  Result<std::unique_ptr<CostModel>> facade = CostModel::create(c);
  ASSERT_TRUE(facade.is_ok());
  Result<std::unique_ptr<StudentInference>> fast = StudentInference::create(**facade);
  ASSERT_TRUE(fast.is_ok()) << fast.status().to_string();
  EXPECT_EQ((*fast)->threads(), 1);
  EXPECT_NE((*fast)->simd_level(), SimdLevel::kAuto);
  EXPECT_GE((*fast)->weight_bytes(), 4 * (*facade)->num_parameters());
  const Batch b = make_batch(12, 20, c, 11);
  std::vector<float> a(12), f(12);
  ASSERT_TRUE((*facade)->predict(view(b, b.descriptors), a).is_ok());
  ASSERT_TRUE((*fast)->predict(view(b, b.descriptors), f).is_ok());
  EXPECT_LT(scaled_error(f, a), 1e-4);
}

TEST(FastInferenceTest, RejectsBadInputsAndOtherKinds) {
  const ModelConfig c = odd_config(12);
  auto model = make_model(c);
  auto fast = make_fast(*model, SimdLevel::kAuto);
  const Batch b = make_batch(4, 20, c, 12);
  std::vector<float> scores(4), emb(4 * 24);
  // Empty batch: OK, nothing written.
  EXPECT_TRUE(fast->predict(FeatureBatch{0, 20, {}, {}, std::span<const float>(b.descriptors).first(5)}, {}).is_ok());
  EXPECT_EQ(fast->predict(view(b, b.descriptors), std::span<float>(scores).first(3)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(fast->embed(view(b, b.descriptors), std::span<float>(emb).first(10)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fast->predict(FeatureBatch{4, 21, b.tokens, b.lengths, b.descriptors}, scores).code(),
            StatusCode::kInvalidArgument);  // seq_len > max_len (and tokens size)
  EXPECT_EQ(fast->predict(view(b, std::span<const float>(b.descriptors).first(7)), scores).code(),
            StatusCode::kInvalidArgument);
  Batch bad = b;
  bad.lengths[2] = 21;
  EXPECT_EQ(fast->predict(view(bad, bad.descriptors), scores).code(), StatusCode::kInvalidArgument);
  bad.lengths[2] = -1;
  EXPECT_EQ(fast->predict(view(bad, bad.descriptors), scores).code(), StatusCode::kInvalidArgument);

  ModelConfig att = c;
  att.kind = ModelKind::kAttention;
  att.n_heads = 2;
  Result<std::shared_ptr<ScoreModel>> attention = make_score_model(att);
  ASSERT_TRUE(attention.is_ok());
  EXPECT_EQ(StudentInference::create(**attention).status().code(), StatusCode::kInvalidArgument);
  InferenceOptions bad_options;
  bad_options.chunk_tokens = 0;
  EXPECT_EQ(StudentInference::create(*model, bad_options).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tcl::trainer

namespace tcl::trainer {
namespace {

// head_mc: with dropout 0 every sample is the deterministic score; with
// dropout the samples spread around it, reproducibly for a seed, and their
// spread tracks the torch MC-dropout spread of the same model.
TEST(FastInferenceTest, HeadMcSamplesTheHeadsDropout) {
  ModelConfig c = odd_config(21);
  c.dropout = 0.0;
  auto model = make_model(c);
  auto fast = make_fast(*model, SimdLevel::kAuto, 1);
  ASSERT_NE(fast, nullptr);
  const Batch b = make_batch(16, c.max_len, c, 21);
  std::vector<float> scores(16), emb(16 * c.d_model), mc(16 * 3);
  ASSERT_TRUE(fast->predict(view(b, b.descriptors), scores).is_ok());
  ASSERT_TRUE(fast->embed(view(b, b.descriptors), emb).is_ok());
  ASSERT_TRUE(fast->head_mc(emb, 16, 3, 7, mc).is_ok());
  for (int s = 0; s < 3; ++s) EXPECT_LT(scaled_error({mc.begin() + s * 16, mc.begin() + (s + 1) * 16}, scores), 1e-4);

  c.dropout = 0.3;
  auto noisy = make_model(c);
  auto fast_noisy = make_fast(*noisy, SimdLevel::kAuto, 1);
  ASSERT_TRUE(fast_noisy->embed(view(b, b.descriptors), emb).is_ok());
  const int S = 400;
  std::vector<float> a(16 * S), again(16 * S), other(16 * S);
  ASSERT_TRUE(fast_noisy->head_mc(emb, 16, S, 1, a).is_ok());
  ASSERT_TRUE(fast_noisy->head_mc(emb, 16, S, 1, again).is_ok());
  ASSERT_TRUE(fast_noisy->head_mc(emb, 16, S, 2, other).is_ok());
  EXPECT_EQ(a, again);
  EXPECT_NE(a, other);
  // Torch's own MC dropout on the same programs: the per-program standard
  // deviations agree in the aggregate (same masks distribution, other draws).
  Result<std::unique_ptr<CostModel>> facade = CostModel::load(*CostModel::wrap(noisy)->save());
  ASSERT_TRUE(facade.is_ok());
  std::vector<float> torch_mc(16 * S);
  ASSERT_TRUE((*facade)->predict_mc(view(b, b.descriptors), S, torch_mc).is_ok());
  double ours = 0, theirs = 0;
  for (int i = 0; i < 16; ++i) {
    double m1 = 0, m2 = 0, t1 = 0, t2 = 0;
    for (int s = 0; s < S; ++s) {
      m1 += a[s * 16 + i];
      m2 += double(a[s * 16 + i]) * a[s * 16 + i];
      t1 += torch_mc[s * 16 + i];
      t2 += double(torch_mc[s * 16 + i]) * torch_mc[s * 16 + i];
    }
    ours += std::sqrt(std::max(0.0, m2 / S - (m1 / S) * (m1 / S)));
    theirs += std::sqrt(std::max(0.0, t2 / S - (t1 / S) * (t1 / S)));
  }
  EXPECT_GT(ours, 0.0);
  EXPECT_NEAR(ours / theirs, 1.0, 0.15) << ours << " vs " << theirs;

  std::vector<float> wrong(5);
  EXPECT_FALSE(fast_noisy->head_mc(emb, 16, S, 1, wrong).is_ok());
  EXPECT_FALSE(fast_noisy->head_mc(emb, 16, 0, 1, a).is_ok());
}

}  // namespace
}  // namespace tcl::trainer
