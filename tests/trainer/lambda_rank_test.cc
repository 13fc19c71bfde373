// tests/trainer/lambda_rank_test.cc — the vectorised loss against a plain
// loop reference, plus the properties the trainer relies on.
#include "trainer/lambda_rank.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

namespace tcl::trainer {
namespace {

// The formula of lambda_rank.h, one group and one pair at a time.
double reference_loss(const std::vector<double>& s, const std::vector<double>& y, const std::vector<int64_t>& g,
                      const LambdaRankOptions& o) {
  std::map<int64_t, std::vector<size_t>> groups;
  for (size_t i = 0; i < g.size(); ++i) groups[g[i]].push_back(i);
  const auto discount = [&](size_t rank) {
    if (o.ndcg_at > 0 && static_cast<int64_t>(rank) > o.ndcg_at) return 0.0;
    return 1.0 / std::log2(1.0 + static_cast<double>(rank));
  };
  // rank[i] (1-based) of each member under `key`, ties by batch position.
  const auto ranks = [&](const std::vector<size_t>& m, const std::vector<double>& key) {
    std::vector<size_t> order = m;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key[a] > key[b]; });
    std::map<size_t, size_t> r;
    for (size_t k = 0; k < order.size(); ++k) r[order[k]] = k + 1;
    return r;
  };
  double total = 0;
  for (const auto& [id, m] : groups) {
    auto r_now = ranks(m, s), r_ideal = ranks(m, y);
    const auto gain = [&](size_t i) { return std::pow(y[i], o.gain_power); };
    double idcg = 0;
    for (size_t i : m) idcg += gain(i) * discount(r_ideal[i]);
    for (size_t i : m) {
      for (size_t j : m) {
        if (!(y[i] > y[j])) continue;
        const double w = std::abs(gain(i) - gain(j)) * std::abs(discount(r_now[i]) - discount(r_now[j])) / idcg;
        total += w * std::log1p(std::exp(-o.sigma * (s[i] - s[j])));
      }
    }
  }
  return total / static_cast<double>(groups.size());
}

std::vector<double> to_vec(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kDouble).contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}
std::vector<int64_t> to_ivec(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kLong).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

double loss_value(const torch::Tensor& s, const torch::Tensor& y, const torch::Tensor& g,
                  const LambdaRankOptions& o = {}) {
  return lambda_rank_loss(s, y, g, o).item<double>();
}

TEST(LambdaRankTest, MatchesLoopReference) {
  torch::manual_seed(3);
  // Interleaved groups of different sizes, with tied labels and tied scores.
  const torch::Tensor groups = torch::tensor({5, 2, 5, 9, 2, 5, 9, 9, 2, 5, 5, 9}, torch::kLong);
  torch::Tensor labels = torch::rand({12}, torch::kDouble) * 0.9 + 0.1;
  labels[3] = labels[6];
  torch::Tensor scores = torch::randn({12}, torch::kDouble);
  scores[0] = scores[2];
  for (LambdaRankOptions o :
       {LambdaRankOptions{}, LambdaRankOptions{2.0, 0}, LambdaRankOptions{1.0, 2}, LambdaRankOptions{1.0, 0, 6.0}}) {
    EXPECT_NEAR(loss_value(scores, labels, groups, o),
                reference_loss(to_vec(scores), to_vec(labels), to_ivec(groups), o), 1e-12)
        << "sigma=" << o.sigma << " ndcg_at=" << o.ndcg_at << " gain_power=" << o.gain_power;
  }
}

TEST(LambdaRankTest, SmallWhenOrderedLargeWhenReversed) {
  const torch::Tensor labels = torch::linspace(0.1, 1.0, 16);
  const torch::Tensor groups = torch::zeros({16}, torch::kLong);
  const double ordered = loss_value(200 * labels, labels, groups);
  const double reversed = loss_value(-200 * labels, labels, groups);
  EXPECT_LT(ordered, 1e-3);
  EXPECT_GT(reversed, 1.0);
  EXPECT_GT(reversed, 1000 * ordered);
}

TEST(LambdaRankTest, DecreasesAsScoresMoveTowardLabelOrder) {
  torch::manual_seed(4);
  const torch::Tensor labels = torch::rand({24}) * 0.9 + 0.1;
  const torch::Tensor groups = torch::arange(24, torch::kLong) % 3;
  const torch::Tensor noise = torch::randn({24});
  double previous = 1e30;
  for (double alpha : {0.0, 0.25, 0.5, 0.75, 1.0}) {
    const double l = loss_value((1 - alpha) * noise + alpha * 10 * labels, labels, groups);
    EXPECT_LT(l, previous) << "alpha=" << alpha;
    previous = l;
  }
  // A gradient step lowers it too.
  torch::Tensor s = noise.clone().requires_grad_(true);
  torch::Tensor loss = lambda_rank_loss(s, labels, groups);
  loss.backward();
  const torch::Tensor stepped = (s - 0.5 * s.grad()).detach();
  EXPECT_LT(loss_value(stepped, labels, groups), loss.item<double>());
}

// A gain power above 1 moves the weight to the pairs near the task's best:
// swapping the two best programs costs far more than swapping the two worst.
TEST(LambdaRankTest, GainPowerWeighsTheTopOfTheList) {
  const torch::Tensor labels = torch::tensor({1.0, 0.95, 0.35, 0.3}, torch::kDouble);
  const torch::Tensor groups = torch::zeros({4}, torch::kLong);
  const auto top_over_bottom = [&](double power) {
    const LambdaRankOptions o{.gain_power = power};
    const double ordered = loss_value(torch::tensor({4.0, 3.0, 2.0, 1.0}, torch::kDouble), labels, groups, o);
    const double top = loss_value(torch::tensor({3.0, 4.0, 2.0, 1.0}, torch::kDouble), labels, groups, o);
    const double bottom = loss_value(torch::tensor({4.0, 3.0, 1.0, 2.0}, torch::kDouble), labels, groups, o);
    return (top - ordered) / (bottom - ordered);
  };
  EXPECT_LT(top_over_bottom(1.0), 10.0);    // linear gains: 2.9x
  EXPECT_GT(top_over_bottom(8.0), 1000.0);  // gain^8: ~6,000x
}

TEST(LambdaRankTest, GroupsDoNotInteract) {
  torch::manual_seed(5);
  const torch::Tensor y1 = torch::rand({8}) + 0.05, y2 = torch::rand({6}) + 0.05;
  const torch::Tensor s1 = torch::randn({8}), s2 = torch::randn({6});
  const torch::Tensor g1 = torch::full({8}, 1, torch::kLong), g2 = torch::full({6}, 2, torch::kLong);
  const double l1 = loss_value(s1, y1, g1), l2 = loss_value(s2, y2, g2);
  const double both = loss_value(torch::cat({s1, s2}), torch::cat({y1, y2}), torch::cat({g1, g2}));
  EXPECT_NEAR(both, (l1 + l2) / 2, 1e-6);

  // Group 1's gradient does not move when group 2's scores change.
  const auto grad_of_first = [&](const torch::Tensor& other_scores) {
    torch::Tensor s = torch::cat({s1, other_scores}).requires_grad_(true);
    lambda_rank_loss(s, torch::cat({y1, y2}), torch::cat({g1, g2})).backward();
    return s.grad().narrow(0, 0, 8).clone();
  };
  EXPECT_TRUE(torch::allclose(grad_of_first(s2), grad_of_first(10 * torch::randn({6}))));
}

TEST(LambdaRankTest, ZeroWithoutDistinctLabels) {
  const torch::Tensor s = torch::randn({5}, torch::requires_grad());
  const torch::Tensor loss = lambda_rank_loss(s, torch::ones({5}), torch::zeros({5}, torch::kLong));
  EXPECT_EQ(loss.item<double>(), 0.0);
  loss.backward();  // still differentiable
  EXPECT_EQ(s.grad().abs().sum().item<double>(), 0.0);
  EXPECT_EQ(loss_value(torch::randn({1}), torch::ones({1}), torch::zeros({1}, torch::kLong)), 0.0);
}

TEST(LambdaRankTest, RejectsMismatchedShapes) {
  EXPECT_THROW(lambda_rank_loss(torch::randn({4}), torch::rand({3}), torch::zeros({4}, torch::kLong)), c10::Error);
  EXPECT_THROW(lambda_rank_loss(torch::randn({4}), torch::rand({4}), torch::zeros({4})), c10::Error);
}

}  // namespace
}  // namespace tcl::trainer
