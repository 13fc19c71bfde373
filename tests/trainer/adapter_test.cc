// tests/trainer/adapter_test.cc — the per-platform adapter (trainer/adapter.h):
// it changes no score until it trains, only its own tensors train, the folded
// plain model scores what the adapted one scores (cross-checked against the
// layers' x·(W + B·A)ᵀ reference), an adapter saved alone folds into its trunk as
// fold_adapter does, a checkpoint keeps one per platform (cost_model.h's
// attach_adapter, load_for_platform, platform_checkpoint), and bad uses are
// refused.
#include "trainer/adapter.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "trainer/cost_model.h"
#include "trainer/fast_inference.h"
#include "trainer/layers.h"
#include "trainer/model_config.h"
#include "trainer/score_model.h"
#include "tests/trainer/small_models.h"

namespace tcl::trainer {
namespace {

ModelConfig tiny(ModelKind kind = ModelKind::kMamba) { return small_config(kind, /*seed=*/3); }

Inputs inputs(const ModelConfig& c) { return make_inputs(6, 10, c, /*seed=*/5); }

torch::Tensor scores(ScoreModel& m, const Inputs& in) {
  torch::NoGradGuard no_grad;
  return m.forward(in.tokens, in.lengths, in.descriptor);
}

// Gives every adapter tensor a value drawn from `seed`, as training would.
void perturb_adapter(ScoreModel& m, std::uint64_t seed = 9) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
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
  EXPECT_EQ(dense, 1 + 4 * tiny().n_layers + 4);  // token_proj, 4 per block, FiLM 2, head 2
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
  EXPECT_THROW(d->add_low_rank(2, gen), c10::Error);
}

// A trained adapter as bytes, folded into its trunk elsewhere: the model
// fold_adapter makes of the adapted model itself.
TEST(AdapterTest, SavedAdapterAppliesToItsTrunkAlone) {
  const ModelConfig c = tiny();
  auto trunk = make(c);
  const Inputs in = inputs(c);
  const torch::Tensor trunk_scores = scores(*trunk, in);
  auto adapted = make(c);  // the same seed: the trunk's weights
  ASSERT_TRUE(add_adapter(*adapted, {.rank = 2, .layers = AdapterLayers::kAll}, 4).is_ok());
  perturb_adapter(*adapted);
  Result<std::string> bytes = save_adapter(*adapted);
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  Result<std::shared_ptr<ScoreModel>> applied = apply_adapter(*trunk, *bytes);
  ASSERT_TRUE(applied.is_ok()) << applied.status().to_string();
  Result<std::shared_ptr<ScoreModel>> folded = fold_adapter(*adapted);
  ASSERT_TRUE(folded.is_ok());
  EXPECT_TRUE(torch::equal(scores(**applied, in), scores(**folded, in)));
  EXPECT_FALSE(torch::equal(scores(**applied, in), trunk_scores));
  EXPECT_TRUE(torch::equal(scores(*trunk, in), trunk_scores));  // the trunk itself is untouched

  EXPECT_EQ(save_adapter(*trunk).status().code(), StatusCode::kInvalidArgument);  // no adapter
  EXPECT_EQ(apply_adapter(*trunk, "not an adapter").status().code(), StatusCode::kDataLoss);
  ModelConfig wider = c;
  wider.d_model = 32;
  EXPECT_EQ(apply_adapter(*make(wider), *bytes).status().code(), StatusCode::kInvalidArgument);
  ModelConfig reseeded = c;
  reseeded.seed = 99;  // the same layout, other weights: another trunk
  EXPECT_EQ(apply_adapter(*make(reseeded), *bytes).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(apply_adapter(*adapted, *bytes).status().code(), StatusCode::kInvalidArgument);  // unfolded
}

// A checkpoint keeps adapters per platform: each platform's model is the
// trunk with its own adapter, any other platform gets the trunk.
TEST(AdapterTest, CheckpointKeepsAnAdapterPerPlatform) {
  const ModelConfig c = tiny();
  auto trunk = make(c);
  const Inputs in = inputs(c);
  const std::string trunk_bytes = save_score_model(*trunk);
  auto trained = [&](std::uint64_t seed) {
    auto m = make(c);
    EXPECT_TRUE(add_adapter(*m, {.rank = 1}, seed).is_ok());
    perturb_adapter(*m, seed);
    Result<std::string> bytes = save_adapter(*m);
    Result<std::shared_ptr<ScoreModel>> folded = fold_adapter(*m);
    EXPECT_TRUE(bytes.is_ok() && folded.is_ok());
    if (!bytes.is_ok() || !folded.is_ok()) return std::make_pair(std::string(), torch::Tensor());
    return std::make_pair(*bytes, scores(**folded, in));
  };
  const auto [first, first_scores] = trained(1);
  const auto [second, second_scores] = trained(2);
  auto platform_scores = [&](const std::string& checkpoint, std::string_view platform) {
    auto model = CostModel::load_for_platform(checkpoint, platform);
    EXPECT_TRUE(model.is_ok()) << model.status().to_string();
    return model.is_ok() ? scores(*(*model)->score_model(), in) : torch::zeros({1});
  };

  Result<std::string> one = attach_adapter(trunk_bytes, "gpu-a", first);
  ASSERT_TRUE(one.is_ok()) << one.status().to_string();
  Result<std::string> two = attach_adapter(*one, "gpu-b", second);
  ASSERT_TRUE(two.is_ok()) << two.status().to_string();
  EXPECT_EQ(*adapter_platforms(*two), (std::vector<std::string>{"gpu-a", "gpu-b"}));
  EXPECT_TRUE(adapter_platforms(trunk_bytes)->empty());
  EXPECT_TRUE(torch::equal(platform_scores(*two, "gpu-a"), first_scores));
  EXPECT_TRUE(torch::equal(platform_scores(*two, "gpu-b"), second_scores));
  EXPECT_TRUE(torch::equal(platform_scores(*two, "x86"), scores(*trunk, in)));  // no adapter: the trunk
  // A platform's model as plain checkpoint bytes (a fine-tune's init, the
  // gate's scoring): what load_for_platform gives; a format-1 checkpoint as it is.
  auto plain_scores = [&](const std::string& checkpoint, std::string_view platform) {
    Result<std::string> bytes = platform_checkpoint(checkpoint, platform);
    EXPECT_TRUE(bytes.is_ok()) << bytes.status().to_string();
    auto model = bytes.is_ok() ? CostModel::load(*bytes) : Result<std::unique_ptr<CostModel>>(bytes.status());
    EXPECT_TRUE(model.is_ok()) << model.status().to_string();
    return model.is_ok() ? scores(*(*model)->score_model(), in) : torch::zeros({1});
  };
  EXPECT_TRUE(torch::equal(plain_scores(*two, "gpu-a"), first_scores));
  EXPECT_TRUE(torch::equal(plain_scores(*two, "x86"), scores(*trunk, in)));
  EXPECT_TRUE(torch::equal(plain_scores(*two, ""), scores(*trunk, in)));  // "": the trunk
  Result<std::string> unadapted = platform_checkpoint(trunk_bytes, "gpu-a");
  ASSERT_TRUE(unadapted.is_ok()) << unadapted.status().to_string();
  EXPECT_EQ(*unadapted, trunk_bytes);
  EXPECT_EQ(platform_checkpoint("not a checkpoint", "gpu-a").status().code(), StatusCode::kDataLoss);
  // A reader that does not name a platform is refused, not handed the trunk.
  EXPECT_EQ(CostModel::load(*two).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(load_score_model(*two).status().code(), StatusCode::kInvalidArgument);
  // A second adapter for a platform replaces the first; the other stays.
  Result<std::string> replaced = attach_adapter(*two, "gpu-a", second);
  ASSERT_TRUE(replaced.is_ok());
  EXPECT_TRUE(torch::equal(platform_scores(*replaced, "gpu-a"), second_scores));
  EXPECT_TRUE(torch::equal(platform_scores(*replaced, "gpu-b"), second_scores));

  EXPECT_EQ(attach_adapter(trunk_bytes, "", first).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(attach_adapter(trunk_bytes, "gpu-a", "garbage").status().code(), StatusCode::kDataLoss);
  ModelConfig wider = c;
  wider.d_model = 32;
  EXPECT_EQ(attach_adapter(save_score_model(*make(wider)), "gpu-a", first).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(adapter_platforms("not a checkpoint").status().code(), StatusCode::kDataLoss);
}

// A checkpoint keeps a pinned model per platform (a best-of version): that
// platform's model is the pinned one, bit for bit, beside adapters on the
// trunk; a platform without either gets the trunk; a format-1 or 2 reader
// is refused; a later adapter for the platform replaces its pinned model.
TEST(AdapterTest, CheckpointKeepsAPinnedModelPerPlatform) {
  const ModelConfig c = tiny();
  auto trunk = make(c);
  const Inputs in = inputs(c);
  const std::string trunk_bytes = save_score_model(*trunk);
  ModelConfig other = c;
  other.seed = 11;
  auto pinned_model = make(other);  // another model of the same inputs: an old platform's parent model
  const std::string pinned_bytes = save_score_model(*pinned_model);
  auto platform_scores = [&](const std::string& checkpoint, std::string_view platform) {
    auto model = CostModel::load_for_platform(checkpoint, platform);
    EXPECT_TRUE(model.is_ok()) << model.status().to_string();
    return model.is_ok() ? scores(*(*model)->score_model(), in) : torch::zeros({1});
  };
  auto m = make(c);
  ASSERT_TRUE(add_adapter(*m, {.rank = 1}, 1).is_ok());
  perturb_adapter(*m, 1);
  Result<std::string> adapter = save_adapter(*m);
  Result<std::shared_ptr<ScoreModel>> folded = fold_adapter(*m);
  ASSERT_TRUE(adapter.is_ok() && folded.is_ok());

  Result<std::string> pinned = pin_platform(trunk_bytes, "x86-old", pinned_bytes);
  ASSERT_TRUE(pinned.is_ok()) << pinned.status().to_string();
  Result<std::string> both = attach_adapter(*pinned, "gpu-new", *adapter);
  ASSERT_TRUE(both.is_ok()) << both.status().to_string();
  EXPECT_EQ(*pinned_platforms(*both), std::vector<std::string>{"x86-old"});
  EXPECT_EQ(*adapter_platforms(*both), std::vector<std::string>{"gpu-new"});
  EXPECT_EQ(*own_model_platforms(*both), (std::vector<std::string>{"gpu-new", "x86-old"}));
  EXPECT_TRUE(torch::equal(platform_scores(*both, "x86-old"), scores(*pinned_model, in)));
  EXPECT_TRUE(torch::equal(platform_scores(*both, "gpu-new"), scores(**folded, in)));
  EXPECT_TRUE(torch::equal(platform_scores(*both, "unknown"), scores(*trunk, in)));  // the trunk
  EXPECT_TRUE(torch::equal(platform_scores(*both, ""), scores(*trunk, in)));
  // The pinned model's bytes come back as they were pinned.
  Result<std::string> own = platform_checkpoint(*both, "x86-old");
  ASSERT_TRUE(own.is_ok());
  EXPECT_EQ(*own, pinned_bytes);
  // Readers of one model are refused, not handed the trunk.
  EXPECT_EQ(CostModel::load(*both).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(load_score_model(*pinned).status().code(), StatusCode::kInvalidArgument);
  // An adapter for the pinned platform replaces its pinned model, and pinning replaces an adapter.
  Result<std::string> replaced = attach_adapter(*both, "x86-old", *adapter);
  ASSERT_TRUE(replaced.is_ok());
  EXPECT_TRUE(pinned_platforms(*replaced)->empty());
  EXPECT_TRUE(torch::equal(platform_scores(*replaced, "x86-old"), scores(**folded, in)));
  Result<std::string> repinned = pin_platform(*replaced, "gpu-new", pinned_bytes);
  ASSERT_TRUE(repinned.is_ok());
  EXPECT_EQ(*adapter_platforms(*repinned), std::vector<std::string>{"x86-old"});
  EXPECT_TRUE(torch::equal(platform_scores(*repinned, "gpu-new"), scores(*pinned_model, in)));
  // Bad uses.
  EXPECT_EQ(pin_platform(trunk_bytes, "", pinned_bytes).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(pin_platform(trunk_bytes, "a", "garbage").is_ok());
  EXPECT_FALSE(pin_platform(trunk_bytes, "a", *both).is_ok());  // not a plain model
  ModelConfig wider = c;
  wider.descriptor_dim = 6;
  EXPECT_EQ(pin_platform(trunk_bytes, "a", save_score_model(*make(wider))).status().code(),
            StatusCode::kInvalidArgument);
}

// A format-2 checkpoint whose adapter entry is missing: kDataLoss, never the trunk.
TEST(AdapterTest, MalformedAdapterEntriesAreDataLoss) {
  const ModelConfig c = tiny();
  auto trunk = make(c);
  torch::serialize::OutputArchive archive;
  archive.write("format", c10::IValue(int64_t{2}));
  archive.write("config", c10::IValue(config_to_text(c)));
  torch::serialize::OutputArchive weights(archive.compilation_unit());
  trunk->save(weights);
  archive.write("model", weights);
  archive.write("adapter_platforms", c10::IValue(c10::List<std::string>({"gpu-a"})));  // and no adapter_0
  std::ostringstream out;
  archive.save_to(out);
  const std::string bytes = std::move(out).str();
  EXPECT_EQ(load_checkpoint_adapters(bytes).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(CostModel::load_for_platform(bytes, "gpu-a").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(attach_adapter(bytes, "gpu-b", "x").status().code(), StatusCode::kDataLoss);
}

TEST(AdapterTest, RefusesBadUses) {
  auto model = make(tiny());
  EXPECT_EQ(add_adapter(*model, {.rank = 0}, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(add_adapter(*model, {.rank = kMaxAdapterRank + 1}, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fold_adapter(*model).status().code(), StatusCode::kInvalidArgument);  // nothing to fold
  ASSERT_TRUE(add_adapter(*model, {.rank = 1}, 1).is_ok());
  EXPECT_EQ(add_adapter(*model, {.rank = 1}, 1).status().code(), StatusCode::kInvalidArgument);  // twice
  // Unfolded, it is neither saved nor given a fast path: both read W alone.
  EXPECT_THROW(save_score_model(*model), c10::Error);
  EXPECT_EQ(StudentInference::create(*model, {}).status().code(), StatusCode::kInvalidArgument);
  auto mlp = make(tiny(ModelKind::kMlp));
  EXPECT_EQ(add_adapter(*mlp, {.rank = 1}, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_adapter_layers("all"), AdapterLayers::kAll);
  EXPECT_EQ(parse_adapter_layers(adapter_layers_name(AdapterLayers::kBlocks)), AdapterLayers::kBlocks);
  EXPECT_FALSE(parse_adapter_layers("trunk").has_value());
}

}  // namespace
}  // namespace tcl::trainer
