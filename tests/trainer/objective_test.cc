// tests/trainer/objective_test.cc — the label loss of objective.h: the
// listwise softmax against a plain loop over the chunks, and its pull
// towards each task's best program.
#include "trainer/objective.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "trainer/distill_loss.h"
#include "trainer/score_model.h"

namespace tcl::trainer {
namespace {

// A batch of labels and chunks only (label_loss reads nothing else).
Batch label_batch(const torch::Tensor& labels, const std::vector<std::int64_t>& chunk_sizes) {
  Batch b;
  b.chunk_sizes = chunk_sizes;
  b.labels = labels;
  std::vector<std::int64_t> groups;
  for (std::size_t k = 0; k < chunk_sizes.size(); ++k) groups.insert(groups.end(), chunk_sizes[k], std::int64_t(k));
  b.groups = torch::tensor(groups, torch::kLong);
  b.rows.resize(groups.size());
  return b;
}

// KL(softmax(β y_k) ‖ softmax(s_k)) averaged over the chunks of 2 or more rows.
double reference_listwise(const std::vector<double>& s, const std::vector<double>& y,
                          const std::vector<std::int64_t>& chunks, double beta) {
  double total = 0;
  int used = 0;
  std::size_t at = 0;
  for (std::int64_t n : chunks) {
    if (n >= 2) {
      double zp = 0, zq = 0;
      for (std::int64_t i = 0; i < n; ++i) zp += std::exp(beta * y[at + i]), zq += std::exp(s[at + i]);
      for (std::int64_t i = 0; i < n; ++i) {
        const double p = std::exp(beta * y[at + i]) / zp, q = std::exp(s[at + i]) / zq;
        total += p * (std::log(p) - std::log(q));
      }
      ++used;
    }
    at += static_cast<std::size_t>(n);
  }
  return used == 0 ? 0.0 : total / used;
}

std::vector<double> to_vec(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kDouble).contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

TEST(LabelLossTest, ListwiseMatchesLoopReference) {
  torch::manual_seed(7);
  const std::vector<std::int64_t> chunks = {5, 1, 7, 3};
  const torch::Tensor labels = torch::rand({16}, torch::kDouble) * 0.9 + 0.1;
  const torch::Tensor scores = torch::randn({16}, torch::kDouble);
  for (double beta : {1.0, 20.0}) {
    const LabelLossOptions o{.kind = LabelLoss::kListwise, .listwise_beta = beta};
    EXPECT_NEAR(label_loss(scores, label_batch(labels, chunks), o).item<double>(),
                reference_listwise(to_vec(scores), to_vec(labels), chunks, beta), 1e-10)
        << "beta " << beta;
  }
}

// A step on the listwise loss raises the best program's score most; a
// sharper target (larger β) gives the best program a larger share of the pull.
TEST(LabelLossTest, ListwisePullsTheBestProgramUp) {
  const torch::Tensor labels = torch::tensor({1.0, 0.97, 0.8, 0.5, 0.3}, torch::kDouble);
  const auto gradient = [&](double beta) {
    torch::Tensor s = torch::zeros({5}, torch::kDouble).requires_grad_(true);
    label_loss(s, label_batch(labels, {5}), {.kind = LabelLoss::kListwise, .listwise_beta = beta}).backward();
    return to_vec(s.grad());
  };
  const std::vector<double> soft = gradient(2.0), sharp = gradient(40.0);
  for (int i = 1; i < 5; ++i) EXPECT_LT(sharp[0], sharp[i]) << i;  // descent raises s_0 most
  EXPECT_LT(sharp[0], soft[0]);                                    // and more so when sharp
  EXPECT_GT(sharp[2], soft[2] - 1e-12);                            // 0.8 of the best: pushed down (or left) when sharp
}

TEST(LabelLossTest, LambdaRankIsTheDefault) {
  torch::manual_seed(8);
  const torch::Tensor labels = torch::rand({8}) * 0.9 + 0.1, scores = torch::randn({8});
  const Batch b = label_batch(labels, {8});
  EXPECT_EQ(label_loss(scores, b, {}).item<double>(), lambda_rank_loss(scores, labels, b.groups).item<double>());
  Optimisation opt;
  opt.gain_power = 3;
  opt.ndcg_at = 4;
  const LabelLossOptions o = label_loss_options(opt);
  EXPECT_EQ(o.kind, LabelLoss::kLambdaRank);
  EXPECT_EQ(o.lambda_rank.gain_power, 3);
  EXPECT_EQ(o.lambda_rank.ndcg_at, 4);
}

// An old platform's KD weight: scaled by its factor on platform k's
// programs, never on the old platforms' bank (the platform's own programs).
TEST(OldTermWeightTest, TheFactorScalesTheNewPlatformsProgramsOnly) {
  DistillTargets w;
  DistillLevers l;
  w.old_weight = 2;
  EXPECT_EQ(old_term_weight(w, l, 0, /*old_bank=*/false), 2.0);  // no factors: 1 each
  l.old_weight_on_new_programs = {0.0, 0.5};
  EXPECT_EQ(old_term_weight(w, l, 0, false), 0.0);
  EXPECT_EQ(old_term_weight(w, l, 1, false), 1.0);
  EXPECT_EQ(old_term_weight(w, l, 0, /*old_bank=*/true), 2.0);
  EXPECT_EQ(old_term_weight(w, l, 1, true), 2.0);
}

// What the old-term tests of batch_loss share: a small student's config, and
// one unlabeled batch of two chunks of 3 with two old platforms' targets
// and descriptors (old_weight 2), drawn from torch's generator at `seed`.
ModelConfig small_config() {
  ModelConfig c;
  c.kind = ModelKind::kMamba;
  c.token_dim = 8;
  c.descriptor_dim = 4;
  c.max_len = 8;
  c.d_model = 16;
  c.d_state = 4;
  c.film_hidden = 8;
  c.head_hidden = 16;
  return c;
}

struct OldTermsBatch {
  Batch batch;
  BatchSource src;
  DistillTerms terms;
};

OldTermsBatch old_terms_batch(const ModelConfig& c, std::uint64_t seed) {
  torch::manual_seed(seed);
  OldTermsBatch o{.batch = label_batch(torch::rand({6}), {3, 3}), .src = {}, .terms = {}};
  for (std::int64_t i = 0; i < 6; ++i) o.batch.rows[static_cast<std::size_t>(i)] = i;
  o.batch.tokens = torch::randn({6, 5, c.token_dim});
  o.batch.lengths = torch::full({6}, 5, torch::kLong);
  o.src.labeled = false;  // no label term: the old terms alone
  for (int j = 0; j < 2; ++j) {
    const torch::Tensor t = torch::randn({6}).contiguous();
    o.src.old_targets.emplace_back(t.data_ptr<float>(), t.data_ptr<float>() + 6);
  }
  o.terms.old_descriptors = {torch::randn({1, c.descriptor_dim}), torch::randn({1, c.descriptor_dim})};
  o.terms.weights.old_weight = 2;
  return o;
}

// batch_loss's old-platform terms, two old platforms on one unlabeled batch:
// each factor scales its own platform's term on platform k's programs, and
// the bank's terms keep old_weight whatever the factors say.
TEST(BatchLossTest, OldPlatformFactorsScaleEachTermOnTheNewPlatformsProgramsOnly) {
  const ModelConfig c = small_config();
  auto model = make_score_model(c);  // eval mode: no dropout
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  OldTermsBatch o = old_terms_batch(c, 3);
  Batch& batch = o.batch;
  BatchSource& src = o.src;
  DistillTerms& terms = o.terms;
  const auto loss = [&](std::vector<double> factors, bool old_bank) {
    terms.levers.old_weight_on_new_programs = std::move(factors);
    src.old_bank = old_bank;
    return batch_loss(**model, src, batch, &terms, {}).item<double>();
  };
  // Platform j's term by hand: old_weight · KD(S(x, h_j), T_j).
  const auto term = [&](int j) {
    const torch::Tensor& h = terms.old_descriptors[static_cast<std::size_t>(j)];
    const torch::Tensor s = (*model)->forward(batch.tokens, batch.lengths, h.expand({6, c.descriptor_dim}));
    const torch::Tensor t = torch::tensor(src.old_targets[static_cast<std::size_t>(j)]);
    return 2.0 * listwise_kd(s, t, batch.chunk_sizes, terms.weights.temperature).item<double>();
  };
  const double both = loss({}, false), first = loss({1.0, 0.0}, false), second = loss({0.0, 1.0}, false);
  ASSERT_GT(first, 0);
  ASSERT_GT(second, 0);
  EXPECT_NE(first, second);
  EXPECT_NEAR(first, term(0), 1e-6 * first);  // each factor its own platform's
  EXPECT_NEAR(second, term(1), 1e-6 * second);
  EXPECT_NEAR(first + second, both, 1e-6 * both);
  EXPECT_NEAR(loss({0.5, 0.0}, false), first / 2, 1e-6 * first);
  EXPECT_EQ(loss({0.0, 0.0}, false), 0.0);
  EXPECT_EQ(loss({0.0, 0.0}, true), both);  // the bank: old_weight on each
  EXPECT_EQ(loss({0.0, 1.0}, true), both);
}

// The feature term (DistillLevers::feature_weight): on the bank only, per
// old platform the relative squared distance of the student's embedding from
// the teacher's, weighted; nothing when the teacher is the student.
TEST(BatchLossTest, FeatureTermAddsTheEmbeddingDistanceOnTheBankOnly) {
  ModelConfig c = small_config();
  auto student = make_score_model(c);  // eval mode: no dropout
  c.seed = 7;
  auto other = make_score_model(c);
  ASSERT_TRUE(student.is_ok() && other.is_ok());
  OldTermsBatch o = old_terms_batch(c, 4);
  Batch& batch = o.batch;
  BatchSource& src = o.src;
  DistillTerms& terms = o.terms;
  const auto loss = [&](double feature_weight, std::shared_ptr<ScoreModel> teacher, bool old_bank) {
    terms.levers.feature_weight = feature_weight;
    terms.teacher = std::move(teacher);
    src.old_bank = old_bank;
    return batch_loss(**student, src, batch, &terms, {}).item<double>();
  };
  // Σ_j FD(E_S(x, h_j), E_T(x, h_j)) by hand.
  double distance = 0;
  for (const torch::Tensor& h : terms.old_descriptors) {
    const torch::Tensor hb = h.expand({6, c.descriptor_dim});
    distance +=
        feature_kd((*student)->embed(batch.tokens, batch.lengths, hb), (*other)->embed(batch.tokens, batch.lengths, hb))
            .item<double>();
  }
  ASSERT_GT(distance, 0);
  const double kd_only = loss(0, nullptr, true);
  EXPECT_NEAR(loss(3, *other, true), kd_only + 3 * distance, 1e-5 * (kd_only + 3 * distance));
  EXPECT_EQ(loss(0, *other, true), kd_only);                   // weight 0: no term
  EXPECT_EQ(loss(3, *student, true), kd_only);                 // the teacher's own embeddings: nothing to pay
  EXPECT_EQ(loss(3, *other, false), loss(0, nullptr, false));  // platform k's programs: no feature term
}

}  // namespace
}  // namespace tcl::trainer
