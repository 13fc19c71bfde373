// tests/trainer/optimizer_test.cc — which parameters AdamW decays
// (optimizer.h): matrices do; the Mamba state, skips, norms, biases and the
// attention positions do not.
#include "trainer/optimizer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "trainer/score_model.h"

namespace tcl::trainer {
namespace {

constexpr int64_t kTokenDim = 8, kDescDim = 4, kLen = 12;

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
  for (const char* name : {"blocks.0.in_proj.weight", "blocks.0.x_proj.weight", "blocks.1.out_proj.weight",
                           "blocks.0.conv_weight", "token_proj.weight", "head.film_in.weight"}) {
    EXPECT_TRUE(has(split.decay_names, name)) << name;
  }
  EXPECT_EQ(split.decay.size() + split.no_decay.size(), model->parameters().size());

  auto adamw = make_adamw(*model, AdamWConfig{.lr = 1e-3, .weight_decay = 0.1});
  ASSERT_EQ(adamw->param_groups().size(), 2u);
  const auto& no_decay = adamw->param_groups()[1];
  EXPECT_EQ(static_cast<const torch::optim::AdamWOptions&>(no_decay.options()).weight_decay(), 0.0);
  EXPECT_EQ(static_cast<const torch::optim::AdamWOptions&>(adamw->param_groups()[0].options()).weight_decay(), 0.1);
  // A_log is held by the no-decay group (same tensor, not a copy).
  const torch::Tensor a_log = model->named_parameters()["blocks.0.A_log"];
  bool found = false;
  for (const auto& p : no_decay.params()) found = found || p.is_same(a_log);
  EXPECT_TRUE(found);
}

TEST(OptimizerTest, AttentionPositionsDoNotDecay) {
  auto model = *make_score_model(tiny_config(ModelKind::kAttention));
  const DecaySplit split = split_weight_decay(*model);
  EXPECT_NE(std::find(split.no_decay_names.begin(), split.no_decay_names.end(), "pos_emb"), split.no_decay_names.end());
}

// The average follows d_t = min(decay, (1 + t) / (10 + t)) step by step,
// and swap() exchanges it with the parameters' values (twice = no change).
TEST(WeightAverageTest, FollowsTheDecayAndSwaps) {
  torch::Tensor p = torch::zeros({3});
  WeightAverage average({p}, 0.5);
  std::vector<double> expected = {0, 0, 0};
  for (int t = 1; t <= 4; ++t) {
    p.fill_(static_cast<double>(t));
    average.update();
    const double d = std::min(0.5, (1.0 + t) / (10.0 + t));
    for (double& e : expected) e = d * e + (1 - d) * t;
  }
  EXPECT_EQ(average.steps(), 4);
  average.swap();
  EXPECT_NEAR(p[0].item<double>(), expected[0], 1e-6);  // the parameters hold the average
  EXPECT_LT(p[0].item<double>(), 4.0);
  average.swap();
  EXPECT_EQ(p[2].item<double>(), 4.0);  // and the last step's values again
}

}  // namespace
}  // namespace tcl::trainer
