// tests/trainer/train_loop_test.cc — optimizer groups and a short training
// run on a planted synthetic task: the loss falls and the planted best
// program of an unseen group is ranked first.
#include "trainer/train_loop.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "trainer/optimizer.h"
#include "trainer/score_model.h"

namespace tcl::trainer {
namespace {

constexpr int64_t kTokenDim = 8, kDescDim = 4, kLen = 12, kGroupSize = 16, kQualitySlot = 4;

ModelConfig tiny_config(ModelKind kind) {
  ModelConfig c;
  c.kind = kind;
  c.token_dim = kTokenDim;
  c.descriptor_dim = kDescDim;
  c.max_len = kLen;
  c.d_model = 32;
  c.d_state = 8;
  c.film_hidden = 16;
  c.head_hidden = 32;
  c.dropout = 0.0;
  c.seed = 3;
  return c;
}

// Programs whose speed depends on one token slot, shaped like core's
// encoding: slots 0..3 are a step-kind one-hot, slot 4 is a numeric slot
// only kind 0 uses (zero elsewhere), slots 5..7 are numeric noise every
// kind has. Step 2 is always kind 0 and carries the quality q in slot 4;
// cost = 1 / (0.1 + q), label = min cost / cost = (0.1 + q) / (0.1 + max q).
// Groups alternate between two platform descriptors.
RankingData synthetic(int64_t n_groups, uint64_t seed) {
  torch::manual_seed(seed);
  const int64_t n = n_groups * kGroupSize;
  RankingData d;
  d.tokens = torch::zeros({n, kLen, kTokenDim});
  torch::Tensor kinds = torch::randint(1, 4, {n, kLen}, torch::kLong);
  kinds.select(1, 2).fill_(0);
  d.tokens.narrow(2, 0, 4).copy_(torch::one_hot(kinds, 4).to(torch::kFloat));
  d.tokens.narrow(2, 5, 3).copy_(0.5 * torch::randn({n, kLen, 3}));
  const torch::Tensor q = torch::rand({n});
  d.tokens.select(2, kQualitySlot).select(1, 2).copy_(q);
  d.lengths = torch::randint(6, kLen + 1, {n}, torch::kLong);
  d.groups = torch::div(torch::arange(n, torch::kLong), kGroupSize, "floor");
  const torch::Tensor platforms = torch::randn({2, kDescDim});
  d.descriptors = platforms.index_select(0, d.groups % 2);
  const torch::Tensor quality = (0.1 + q).view({n_groups, kGroupSize});
  d.labels = (quality / std::get<0>(quality.max(1, /*keepdim=*/true))).view({n});
  return d;
}

// Spearman rank correlation of two [n] tensors (no ties expected).
double spearman(const torch::Tensor& a, const torch::Tensor& b) {
  torch::Tensor ra = a.argsort().argsort().to(torch::kDouble);
  torch::Tensor rb = b.argsort().argsort().to(torch::kDouble);
  ra = ra - ra.mean();
  rb = rb - rb.mean();
  return ((ra * rb).sum() / (ra.norm() * rb.norm())).item<double>();
}

TEST(OptimizerTest, MambaStateAndSkipAndNormsDoNotDecay) {
  auto model = *make_score_model(tiny_config(ModelKind::kMamba));
  const DecaySplit split = split_weight_decay(*model);
  const auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  for (const char* name : {"blocks.0.A_log", "blocks.0.D", "blocks.0.norm.weight", "norm_f.weight",
                           "blocks.0.dt_proj.bias", "blocks.1.conv_bias", "head.head_in.bias"}) {
    EXPECT_TRUE(has(split.no_decay_names, name)) << name;
  }
  for (const char* name : {"blocks.0.in_proj.weight", "blocks.0.x_proj.weight",
                           "blocks.1.out_proj.weight", "blocks.0.conv_weight",
                           "token_proj.weight", "head.film_in.weight"}) {
    EXPECT_TRUE(has(split.decay_names, name)) << name;
  }
  EXPECT_EQ(split.decay.size() + split.no_decay.size(), model->parameters().size());

  auto adamw = make_adamw(*model, AdamWConfig{.lr = 1e-3, .weight_decay = 0.1});
  ASSERT_EQ(adamw->param_groups().size(), 2u);
  const auto& no_decay = adamw->param_groups()[1];
  EXPECT_EQ(static_cast<const torch::optim::AdamWOptions&>(no_decay.options()).weight_decay(), 0.0);
  EXPECT_EQ(static_cast<const torch::optim::AdamWOptions&>(adamw->param_groups()[0].options())
                .weight_decay(),
            0.1);
  // A_log is held by the no-decay group (same tensor, not a copy).
  const torch::Tensor a_log = model->named_parameters()["blocks.0.A_log"];
  bool found = false;
  for (const auto& p : no_decay.params()) found = found || p.is_same(a_log);
  EXPECT_TRUE(found);
}

TEST(OptimizerTest, AttentionPositionsDoNotDecay) {
  auto model = *make_score_model(tiny_config(ModelKind::kAttention));
  const DecaySplit split = split_weight_decay(*model);
  EXPECT_NE(std::find(split.no_decay_names.begin(), split.no_decay_names.end(), "pos_emb"),
            split.no_decay_names.end());
}

std::string param_name(const ::testing::TestParamInfo<ModelKind>& p) {
  return std::string(model_kind_name(p.param));
}

class TrainKindsTest : public ::testing::TestWithParam<ModelKind> {};

INSTANTIATE_TEST_SUITE_P(Kinds, TrainKindsTest,
                         ::testing::Values(ModelKind::kMamba, ModelKind::kAttention,
                                           ModelKind::kMlp),
                         param_name);

TEST_P(TrainKindsTest, ShortRunLowersLossAndRanksPlantedTask) {
  torch::set_num_threads(1);  // the box is shared; OpenMP spin-waits hurt under load
  const RankingData train = synthetic(20, 1);
  auto model = *make_score_model(tiny_config(GetParam()));
  auto adamw = make_adamw(*model, AdamWConfig{.lr = 3e-3, .weight_decay = 0.01});
  const double before = ranking_loss(*model, train);

  const auto start = std::chrono::steady_clock::now();
  TrainOptions options;
  options.steps = 150;
  options.groups_per_batch = 4;
  options.seed = 9;
  const TrainStats stats = train_ranking(*model, *adamw, train, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double after = ranking_loss(*model, train);
  std::printf("[ train ] %-9s loss %.4f -> %.4f in %zu steps, %.2f s\n",
              std::string(model_kind_name(GetParam())).c_str(), before, after,
              stats.step_losses.size(), seconds);
  ASSERT_EQ(stats.step_losses.size(), 150u);
  EXPECT_LT(after, 0.5 * before);

  torch::NoGradGuard no_grad;
  // Unseen groups on the training platforms rank well...
  RankingData held_out = synthetic(4, 5);
  held_out.descriptors = train.descriptors.narrow(0, 0, 4 * kGroupSize);
  const torch::Tensor held_scores =
      model->forward(held_out.tokens, held_out.lengths, held_out.descriptors);
  for (int64_t g = 0; g < 4; ++g) {
    EXPECT_GT(spearman(held_scores.narrow(0, g * kGroupSize, kGroupSize),
                       held_out.labels.narrow(0, g * kGroupSize, kGroupSize)),
              0.8)
        << "held-out group " << g;
  }
  // ...and in a planted group, program 5 (q = 0.95 vs ≤ 0.5) comes first.
  RankingData planted = synthetic(1, 77);
  planted.descriptors = train.descriptors.narrow(0, 0, kGroupSize);
  planted.tokens.select(2, kQualitySlot).select(1, 2).copy_(0.5 * torch::rand({kGroupSize}));
  planted.tokens[5][2][kQualitySlot] = 0.95;
  const torch::Tensor scores = model->forward(planted.tokens, planted.lengths, planted.descriptors);
  EXPECT_EQ(scores.argmax().item<int64_t>(), 5) << scores;
}

TEST(TrainLoopTest, SameSeedsSameRun) {
  torch::set_num_threads(1);  // the box is shared; OpenMP spin-waits hurt under load
  const RankingData train = synthetic(6, 2);
  std::vector<double> runs[2];
  torch::Tensor weights[2];
  for (int r = 0; r < 2; ++r) {
    ModelConfig c = tiny_config(ModelKind::kMamba);
    c.dropout = 0.1;  // the dropout stream is seeded too
    auto model = *make_score_model(c);
    auto adamw = make_adamw(*model);
    TrainOptions options;
    options.steps = 5;
    options.groups_per_batch = 2;
    runs[r] = train_ranking(*model, *adamw, train, options).step_losses;
    weights[r] = model->named_parameters()["blocks.0.A_log"].clone();
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_TRUE(torch::equal(weights[0], weights[1]));
}

}  // namespace
}  // namespace tcl::trainer
