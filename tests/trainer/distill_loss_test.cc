// tests/trainer/distill_loss_test.cc — listwise KD, feature KD and EWC (distill_loss.h)
// against the formulas written as plain loops over std::vector<double>: the
// values and the gradients, on random scores, targets, chunkings and
// temperatures; plus the properties distillation relies on.
#include "trainer/distill_loss.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

namespace tcl::trainer {
namespace {

std::vector<double> to_vec(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kDouble).contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

// log softmax of x / tau over one chunk, by the definition.
std::vector<double> log_softmax(const std::vector<double>& x, double tau) {
  double m = -INFINITY;
  for (double v : x) m = std::max(m, v / tau);
  double z = 0;
  for (double v : x) z += std::exp(v / tau - m);
  std::vector<double> out;
  for (double v : x) out.push_back(v / tau - m - std::log(z));
  return out;
}

// KD = 1/K Σ_k Σ_i p_ki (log p_ki − log q_ki) over chunks of >= 2 rows, and
// its gradient in the scores: ∂KL_k/∂s_ki = (q_ki − p_ki) / τ, divided by K.
double reference_kd(const std::vector<double>& s, const std::vector<double>& t, const std::vector<std::int64_t>& sizes,
                    double tau, std::vector<double>* grad) {
  grad->assign(s.size(), 0.0);
  double total = 0;
  int used = 0;
  std::size_t offset = 0;
  for (std::int64_t n : sizes) {
    if (n >= 2) {
      const std::vector<double> sc(s.begin() + offset, s.begin() + offset + n);
      const std::vector<double> tc(t.begin() + offset, t.begin() + offset + n);
      const std::vector<double> lq = log_softmax(sc, tau), lp = log_softmax(tc, tau);
      for (std::int64_t i = 0; i < n; ++i) {
        total += std::exp(lp[i]) * (lp[i] - lq[i]);
        (*grad)[offset + i] = (std::exp(lq[i]) - std::exp(lp[i])) / tau;
      }
      ++used;
    }
    offset += static_cast<std::size_t>(n);
  }
  if (used > 0) {
    for (double& g : *grad) g /= used;
    return total / used;
  }
  return 0.0;
}

TEST(DistillLossTest, ListwiseKdMatchesTheReference) {
  torch::manual_seed(3);
  const std::vector<std::vector<std::int64_t>> chunkings = {{5}, {3, 4, 1, 6}, {1, 1}, {2, 7, 2}};
  for (const double tau : {0.5, 1.0, 2.0}) {
    for (const auto& sizes : chunkings) {
      std::int64_t b = 0;
      for (std::int64_t n : sizes) b += n;
      const torch::Tensor scores = (3.0 * torch::randn({b})).requires_grad_(true);
      const torch::Tensor target = 3.0 * torch::randn({b});
      const torch::Tensor kd = listwise_kd(scores, target, sizes, tau);
      std::vector<double> grad;
      const double expected = reference_kd(to_vec(scores.detach()), to_vec(target), sizes, tau, &grad);
      EXPECT_NEAR(kd.item<double>(), expected, 1e-5 * std::max(1.0, std::fabs(expected))) << "tau " << tau;
      // No chunk of two rows: a constant 0, which no gradient reaches.
      if (!kd.requires_grad()) {
        EXPECT_EQ(expected, 0.0);
        continue;
      }
      kd.backward();
      const std::vector<double> got = to_vec(scores.grad());
      for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], grad[i], 1e-5) << "row " << i;
    }
  }
}

TEST(DistillLossTest, ListwiseKdIsZeroOnItsTargetAndShiftInvariantPerChunk) {
  const torch::Tensor target = torch::tensor({0.3, -1.0, 2.0, 0.5, 0.1}, torch::kFloat);
  const std::vector<std::int64_t> sizes = {3, 2};
  EXPECT_NEAR(listwise_kd(target, target, sizes, 1.0).item<double>(), 0.0, 1e-7);
  // A ranking only: adding a constant to one chunk's scores changes nothing.
  const torch::Tensor scores = torch::tensor({1.0, 0.0, -1.0, 2.0, 2.5}, torch::kFloat);
  torch::Tensor shifted = scores.clone();
  shifted.narrow(0, 0, 3).add_(7.0);
  EXPECT_NEAR(listwise_kd(scores, target, sizes, 1.0).item<double>(),
              listwise_kd(shifted, target, sizes, 1.0).item<double>(), 1e-6);
  EXPECT_GT(listwise_kd(scores, target, sizes, 1.0).item<double>(), 0.01);
  // No chunk of two: nothing to rank.
  EXPECT_EQ(listwise_kd(scores, target, {1, 1, 1, 1, 1}, 1.0).item<double>(), 0.0);
}

TEST(DistillLossTest, EwcMatchesTheReference) {
  torch::manual_seed(4);
  const std::vector<std::vector<std::int64_t>> shapes = {{3, 4}, {5}, {2, 2, 2}};
  std::vector<torch::Tensor> params, anchor, fisher;
  for (const auto& shape : shapes) {
    params.push_back(torch::randn(shape).requires_grad_(true));
    anchor.push_back(torch::randn(shape));
    fisher.push_back(torch::rand(shape) * 2.0);
  }
  const torch::Tensor ewc = ewc_penalty(params, anchor, fisher);
  ewc.backward();
  // Σ_i F_i (θ_i − θ*_i)², and ∂/∂θ_i = 2 F_i (θ_i − θ*_i).
  double expected = 0;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const std::vector<double> p = to_vec(params[k].detach()), a = to_vec(anchor[k]), f = to_vec(fisher[k]);
    const std::vector<double> g = to_vec(params[k].grad());
    for (std::size_t i = 0; i < p.size(); ++i) {
      expected += f[i] * (p[i] - a[i]) * (p[i] - a[i]);
      EXPECT_NEAR(g[i], 2.0 * f[i] * (p[i] - a[i]), 1e-5) << "tensor " << k << " entry " << i;
    }
  }
  EXPECT_NEAR(ewc.item<double>(), expected, 1e-5 * expected);
  // At the anchor there is nothing to pay.
  EXPECT_EQ(ewc_penalty(anchor, anchor, fisher).item<double>(), 0.0);
}

TEST(DistillLossTest, FeatureKdMatchesTheReference) {
  torch::manual_seed(5);
  const torch::Tensor embedding = torch::randn({6, 4}).requires_grad_(true);
  const torch::Tensor target = torch::randn({6, 4}) * 3.0;
  const torch::Tensor fd = feature_kd(embedding, target);
  fd.backward();
  // Σ (e − t)² / Σ t², and ∂/∂e = 2 (e − t) / Σ t².
  const std::vector<double> e = to_vec(embedding.detach()), t = to_vec(target), g = to_vec(embedding.grad());
  double distance = 0, size = 0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    distance += (e[i] - t[i]) * (e[i] - t[i]);
    size += t[i] * t[i];
  }
  EXPECT_NEAR(fd.item<double>(), distance / size, 1e-5 * distance / size);
  for (std::size_t i = 0; i < e.size(); ++i) EXPECT_NEAR(g[i], 2.0 * (e[i] - t[i]) / size, 1e-5) << "entry " << i;
  // The teacher's own embeddings cost nothing; scaling both scales nothing.
  EXPECT_EQ(feature_kd(target, target).item<double>(), 0.0);
  EXPECT_NEAR(feature_kd(embedding.detach() * 10.0, target * 10.0).item<double>(), fd.item<double>(), 1e-5);
  // An all-zero target is defined (0), with a finite gradient.
  const torch::Tensor e2 = torch::randn({3, 4}).requires_grad_(true);
  const torch::Tensor zero = feature_kd(e2, torch::zeros({3, 4}));
  zero.backward();
  EXPECT_EQ(zero.item<double>(), 0.0);
  EXPECT_TRUE(torch::isfinite(e2.grad()).all().item<bool>());
}

}  // namespace
}  // namespace tcl::trainer
