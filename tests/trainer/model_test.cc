// tests/trainer/model_test.cc — the student and the baselines: sizes,
// shapes, padding invariance, seeding, checkpoints, MC dropout, and that
// every parameter is wired into the score.
#include "trainer/model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <string>

#include "trainer/model_config.h"
#include "trainer/score_model.h"
#include "tests/trainer/small_models.h"

namespace tcl::trainer {
namespace {

std::string param_name(const ::testing::TestParamInfo<ModelKind>& p) { return std::string(model_kind_name(p.param)); }

class AllKindsTest : public ::testing::TestWithParam<ModelKind> {};

INSTANTIATE_TEST_SUITE_P(Kinds, AllKindsTest,
                         ::testing::Values(ModelKind::kMamba, ModelKind::kAttention, ModelKind::kMlp), param_name);

TEST(ModelSizeTest, DefaultModelsWeighPointOneToPointFourMegabytes) {
  for (ModelKind kind : {ModelKind::kMamba, ModelKind::kAttention, ModelKind::kMlp}) {
    ModelConfig c;  // token_dim 32, descriptor_dim 16, d_model 64
    c.kind = kind;
    const auto model = make(c);
    const int64_t n = model->num_parameters();
    std::printf("[ size ] %-9s %7lld parameters, %.3f MB fp32\n", std::string(model_kind_name(kind)).c_str(),
                static_cast<long long>(n), n * 4 / 1e6);
    if (kind == ModelKind::kMlp) continue;  // the MLP baseline is smaller by design
    EXPECT_GE(n * 4, 100'000) << model_kind_name(kind);
    EXPECT_LE(n * 4, 400'000) << model_kind_name(kind);
  }
  ModelConfig c;
  EXPECT_EQ(make(c)->num_parameters(), 81217);  // the figure in trainer/model.h
}

TEST_P(AllKindsTest, ScoresAndEmbeddingsHaveTheRightShape) {
  const ModelConfig c = small_config(GetParam());
  auto model = make(c);
  const Inputs in = make_inputs(5, 12, c);
  torch::NoGradGuard no_grad;
  EXPECT_EQ(model->forward(in.tokens, in.lengths, in.descriptor).sizes(), torch::IntArrayRef({5}));
  EXPECT_EQ(model->embed(in.tokens, in.lengths, in.descriptor).sizes(), torch::IntArrayRef({5, c.d_model}));
  EXPECT_TRUE(torch::isfinite(model->forward(in.tokens, in.lengths, in.descriptor)).all().item<bool>());
}

TEST_P(AllKindsTest, PaddingNeverChangesTheScore) {
  const ModelConfig c = small_config(GetParam());
  auto model = make(c);
  const Inputs in = make_inputs(6, 10, c);
  // Same programs padded to 16 rows with garbage past each length.
  torch::Tensor padded = 100 * torch::randn({6, 16, c.token_dim});
  padded.narrow(1, 0, 10).copy_(in.tokens);
  const torch::Tensor mask = (torch::arange(16).unsqueeze(0) < in.lengths.unsqueeze(1)).unsqueeze(-1);
  padded = torch::where(mask, padded, 100 * torch::randn({6, 16, c.token_dim}));
  torch::NoGradGuard no_grad;
  const torch::Tensor a = model->forward(in.tokens, in.lengths, in.descriptor);
  const torch::Tensor b = model->forward(padded, in.lengths, in.descriptor);
  EXPECT_LT((a - b).abs().max().item<double>(), 1e-5);
}

TEST_P(AllKindsTest, SameSeedSameModelOtherSeedOtherModel) {
  const ModelConfig c = small_config(GetParam(), 11);
  ModelConfig other = c;
  other.seed = 12;
  auto m1 = make(c), m2 = make(c), m3 = make(other);
  const auto p1 = m1->parameters(), p2 = m2->parameters(), p3 = m3->parameters();
  ASSERT_EQ(p1.size(), p2.size());
  bool any_differs = false;
  for (size_t i = 0; i < p1.size(); ++i) {
    EXPECT_TRUE(torch::equal(p1[i], p2[i])) << i;
    any_differs = any_differs || !torch::equal(p1[i], p3[i]);
  }
  EXPECT_TRUE(any_differs);
}

TEST_P(AllKindsTest, CheckpointRoundTripGivesTheSameScores) {
  const ModelConfig c = small_config(GetParam());
  auto model = make(c);
  const std::string bytes = save_score_model(*model);
  Result<std::shared_ptr<ScoreModel>> loaded = load_score_model(bytes);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ(config_to_text((*loaded)->config()), config_to_text(c));
  const Inputs in = make_inputs(4, 9, c);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->forward(in.tokens, in.lengths, in.descriptor),
                           (*loaded)->forward(in.tokens, in.lengths, in.descriptor)));
}

TEST(CheckpointTest, RejectsGarbageAndTruncation) {
  auto model = make(small_config(ModelKind::kMamba));
  const std::string bytes = save_score_model(*model);
  EXPECT_EQ(load_score_model("not a checkpoint").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(load_score_model(std::string_view(bytes).substr(0, bytes.size() / 2)).status().code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(load_score_model("").status().code(), StatusCode::kDataLoss);
}

TEST_P(AllKindsTest, EvalIsDeterministicAndMcDropoutVaries) {
  const ModelConfig c = small_config(GetParam());
  auto model = make(c);
  const Inputs in = make_inputs(8, 12, c);
  torch::NoGradGuard no_grad;
  const torch::Tensor a = model->forward(in.tokens, in.lengths, in.descriptor);
  EXPECT_TRUE(torch::equal(a, model->forward(in.tokens, in.lengths, in.descriptor)));
  const torch::Tensor s1 = model->forward_mc(in.tokens, in.lengths, in.descriptor);
  const torch::Tensor s2 = model->forward_mc(in.tokens, in.lengths, in.descriptor);
  EXPECT_FALSE(torch::equal(s1, s2));
  EXPECT_FALSE(torch::equal(a, s1));
}

TEST_P(AllKindsTest, EveryParameterReceivesGradient) {
  const ModelConfig c = small_config(GetParam());
  auto model = make(c);
  const Inputs in = make_inputs(6, 12, c);
  model->forward(in.tokens, in.lengths, in.descriptor).pow(2).sum().backward();
  for (const auto& p : model->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << p.key();
  }
}

TEST_P(AllKindsTest, DescriptorConditionsTheScore) {
  const ModelConfig c = small_config(GetParam());
  auto model = make(c);
  const Inputs in = make_inputs(4, 8, c);
  torch::NoGradGuard no_grad;
  const torch::Tensor a = model->forward(in.tokens, in.lengths, in.descriptor);
  const torch::Tensor b = model->forward(in.tokens, in.lengths, in.descriptor + 1.0);
  EXPECT_GT((a - b).abs().max().item<double>(), 0.0);
}

TEST_P(AllKindsTest, EmbedEachIsEmbedUnderEachDescriptor) {
  const ModelConfig c = small_config(GetParam());
  auto model = make(c);
  const Inputs in = make_inputs(4, 8, c);
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> each =
      model->embed_each(in.tokens, in.lengths, {in.descriptor, in.descriptor + 1.0});
  ASSERT_EQ(each.size(), 2u);
  EXPECT_TRUE(torch::equal(each[0], model->embed(in.tokens, in.lengths, in.descriptor)));
  EXPECT_TRUE(torch::equal(each[1], model->embed(in.tokens, in.lengths, in.descriptor + 1.0)));
  EXPECT_FALSE(torch::equal(each[0], each[1]));
  EXPECT_TRUE(model->embed_each(in.tokens, in.lengths, {}).empty());
}

TEST_P(AllKindsTest, RejectsBadInputs) {
  const ModelConfig c = small_config(GetParam());
  auto model = make(c);
  const Inputs in = make_inputs(3, 8, c);
  EXPECT_THROW(model->forward(in.tokens.narrow(2, 0, 5), in.lengths, in.descriptor), c10::Error);
  EXPECT_THROW(model->forward(in.tokens, in.lengths + 100, in.descriptor), c10::Error);
  EXPECT_THROW(model->forward(in.tokens, in.lengths, in.descriptor.narrow(1, 0, 2)), c10::Error);
  EXPECT_THROW(model->forward(torch::randn({3, 17, c.token_dim}), in.lengths, in.descriptor),
               c10::Error);  // longer than max_len
}

// The whole student in float64 against central differences, on a sample of
// parameters: checks the scan is wired into the block correctly.
TEST(MambaStudentTest, GradientMatchesFiniteDifferences) {
  ModelConfig c = small_config(ModelKind::kMamba);
  c.dropout = 0.0;
  auto model = make(c);
  model->to(torch::kDouble);
  Inputs in = make_inputs(3, 7, c);
  in.tokens = in.tokens.to(torch::kDouble);
  in.descriptor = in.descriptor.to(torch::kDouble);
  const auto loss = [&] { return model->forward(in.tokens, in.lengths, in.descriptor).pow(2).sum(); };
  loss().backward();
  torch::NoGradGuard no_grad;
  int checked = 0;
  for (const auto& p : model->named_parameters()) {
    torch::Tensor flat = p.value().view({-1});
    const torch::Tensor grad = p.value().grad().reshape({-1});
    for (int64_t i : {int64_t{0}, flat.numel() / 2, flat.numel() - 1}) {
      const double saved = flat[i].item<double>();
      const double eps = 1e-6;
      flat[i] = saved + eps;
      const double up = loss().item<double>();
      flat[i] = saved - eps;
      const double down = loss().item<double>();
      flat[i] = saved;
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(grad[i].item<double>(), numeric, 1e-6 + 1e-5 * std::abs(numeric)) << p.key() << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 30);
}

TEST(ModelConfigTest, TextRoundTripAndRejections) {
  ModelConfig c = small_config(ModelKind::kAttention, 42);
  c.dropout = 0.125;
  Result<ModelConfig> back = config_from_text(config_to_text(c));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(config_to_text(*back), config_to_text(c));
  EXPECT_EQ(config_from_text("kind=mamba\nwidth=3\n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(config_from_text("kind=lstm\n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(config_from_text("d_model=x\n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(config_from_text("d_model=0\n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(config_from_text("d_model=32\n").is_ok());  // missing keys keep defaults
  ModelConfig bad_heads = small_config(ModelKind::kAttention);
  bad_heads.n_heads = 3;
  EXPECT_EQ(make_score_model(bad_heads).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tcl::trainer
