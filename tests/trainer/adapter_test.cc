// tests/trainer/adapter_test.cc — the per-platform adapter (trainer/adapter.h):
// it changes no score until it trains, only its own tensors train, the folded
// plain model scores what the adapted one scores (cross-checked against the
// layers' x·Aᵀ·Bᵀ path), and bad uses are refused.
#include "trainer/adapter.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "trainer/layers.h"
#include "trainer/model_config.h"
#include "trainer/score_model.h"

namespace tcl::trainer {
namespace {

ModelConfig tiny(ModelKind kind = ModelKind::kMamba) {
  ModelConfig c;
  c.kind = kind;
  c.token_dim = 8;
  c.descriptor_dim = 4;
  c.max_len = 16;
  c.d_model = 16;
  c.d_state = 4;
  c.n_heads = 2;
  c.film_hidden = 8;
  c.head_hidden = 16;
  c.seed = 3;
  return c;
}

std::shared_ptr<ScoreModel> make(const ModelConfig& c) {
  Result<std::shared_ptr<ScoreModel>> m = make_score_model(c);
  EXPECT_TRUE(m.is_ok()) << m.status().to_string();
  return *m;
}

struct Inputs {
  torch::Tensor tokens, lengths, descriptor;
};

Inputs inputs(const ModelConfig& c) {
  torch::manual_seed(5);
  return {torch::randn({6, 10, c.token_dim}), torch::randint(1, 11, {6}, torch::kLong),
          torch::randn({6, c.descriptor_dim})};
}

torch::Tensor scores(ScoreModel& m, const Inputs& in) {
  torch::NoGradGuard no_grad;
  return m.forward(in.tokens, in.lengths, in.descriptor);
}

// Gives every adapter tensor a value, as training would.
void perturb_adapter(ScoreModel& m) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(9);
  for (auto& item : m.named_parameters()) {
    if (item.key().find("lora_") != std::string::npos) item.value().copy_(0.3 * torch::randn(item.value().sizes()));
  }
}

TEST(AdapterTest, ChangesNoScoreUntilItTrainsAndOnlyItTrains) {
  const ModelConfig c = tiny();
  auto model = make(c);
  const Inputs in = inputs(c);
  const torch::Tensor before = scores(*model, in);
  const std::int64_t own = model->num_parameters();
  Result<std::int64_t> added = add_adapter(*model, {.rank = 2, .layers = AdapterLayers::kBlocks}, 1);
  ASSERT_TRUE(added.is_ok()) << added.status().to_string();
  // Per block: in_proj 16 → 64 and out_proj 32 → 16, rank 2 each side.
  const std::int64_t expected = c.n_layers * 2 * ((16 + 64) + (32 + 16));
  EXPECT_EQ(*added, expected);
  EXPECT_EQ(model->num_parameters(), own + expected);
  EXPECT_TRUE(has_adapter(*model));
  EXPECT_TRUE(torch::equal(scores(*model, in), before));  // B = 0

  std::int64_t trainable = 0;
  for (auto& item : model->named_parameters()) {
    const bool lora = item.key().find("lora_") != std::string::npos;
    EXPECT_EQ(item.value().requires_grad(), lora) << item.key();
    trainable += item.value().requires_grad() ? item.value().numel() : 0;
  }
  EXPECT_EQ(trainable, expected);
  // A gradient reaches every adapter tensor (B first: A's is zero while B is).
  perturb_adapter(*model);
  model->forward(in.tokens, in.lengths, in.descriptor).sum().backward();
  for (auto& item : model->named_parameters()) {
    if (!item.value().requires_grad()) continue;
    ASSERT_TRUE(item.value().grad().defined()) << item.key();
    EXPECT_GT(item.value().grad().abs().sum().item<double>(), 0.0) << item.key();
  }
}

TEST(AdapterTest, AllLayersAdaptsEveryDense) {
  auto model = make(tiny());
  Result<std::int64_t> added = add_adapter(*model, {.rank = 1, .layers = AdapterLayers::kAll}, 1);
  ASSERT_TRUE(added.is_ok());
  std::int64_t dense = 0, rank_sum = 0;
  for (const auto& item : model->named_modules("", false)) {
    const auto* d = item.value()->as<DenseImpl>();
    if (d == nullptr) continue;
    ++dense;
    ASSERT_TRUE(d->lora_a.defined()) << item.key();
    rank_sum += d->weight.size(0) + d->weight.size(1);
  }
  EXPECT_GE(dense, 9);  // token_proj, 4 per block, FiLM 2, head 2
  EXPECT_EQ(*added, rank_sum);
}

TEST(AdapterTest, FoldedModelScoresWhatTheAdaptedModelScores) {
  const ModelConfig c = tiny();
  auto model = make(c);
  const Inputs in = inputs(c);
  const torch::Tensor original = scores(*model, in);
  ASSERT_TRUE(add_adapter(*model, {.rank = 3, .layers = AdapterLayers::kAll}, 2).is_ok());
  perturb_adapter(*model);
  const torch::Tensor adapted = scores(*model, in);
  EXPECT_GT((adapted - original).abs().max().item<double>(), 1e-3);  // the adapter matters

  Result<std::shared_ptr<ScoreModel>> folded = fold_adapter(*model);
  ASSERT_TRUE(folded.is_ok()) << folded.status().to_string();
  EXPECT_FALSE(has_adapter(**folded));
  EXPECT_EQ((*folded)->num_parameters(), make(c)->num_parameters());
  EXPECT_TRUE(torch::allclose(scores(**folded, in), adapted, 1e-5, 1e-5));
  // A plain checkpoint: it saves and loads as any model of its config.
  Result<std::shared_ptr<ScoreModel>> loaded = load_score_model(save_score_model(**folded));
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_TRUE(torch::equal(scores(**loaded, in), scores(**folded, in)));
}

TEST(AdapterTest, LowRankDenseIsItsEffectiveWeight) {
  Dense d(5, 7);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(4);
  d->reset_parameters(gen);
  d->add_low_rank(2, gen);
  {
    torch::NoGradGuard no_grad;
    d->lora_b.copy_(torch::randn({7, 2}));
  }
  const torch::Tensor x = torch::randn({3, 5});
  torch::NoGradGuard no_grad;
  const torch::Tensor reference = torch::matmul(x, (d->weight + d->lora_b.mm(d->lora_a)).t()) + d->bias;
  EXPECT_TRUE(torch::allclose(d->forward(x), reference, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(d->effective_weight(), d->weight + d->lora_b.mm(d->lora_a)));
  EXPECT_THROW(d->add_low_rank(2, gen), c10::Error);
}

TEST(AdapterTest, RefusesBadUses) {
  auto model = make(tiny());
  EXPECT_EQ(add_adapter(*model, {.rank = 0}, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(add_adapter(*model, {.rank = kMaxAdapterRank + 1}, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fold_adapter(*model).status().code(), StatusCode::kInvalidArgument);  // nothing to fold
  ASSERT_TRUE(add_adapter(*model, {.rank = 1}, 1).is_ok());
  EXPECT_EQ(add_adapter(*model, {.rank = 1}, 1).status().code(), StatusCode::kInvalidArgument);  // twice
  auto mlp = make(tiny(ModelKind::kMlp));
  EXPECT_EQ(add_adapter(*mlp, {.rank = 1}, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_adapter_layers("all"), AdapterLayers::kAll);
  EXPECT_EQ(parse_adapter_layers(adapter_layers_name(AdapterLayers::kBlocks)), AdapterLayers::kBlocks);
  EXPECT_FALSE(parse_adapter_layers("trunk").has_value());
}

}  // namespace
}  // namespace tcl::trainer
