// tests/trainer/fisher_test.cc — the diagonal Fisher (fisher.h) against a
// direct computation on a tiny student: each batch assembled by hand from the
// dataset's plain vectors (untrimmed, no gather_batch), its LambdaRank
// gradient taken alone, squared and summed in double, scaled to mean 1; and
// the bytes' round trip.
#include "trainer/fisher.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "trainer/batches.h"

namespace tcl::trainer {
namespace {

constexpr const char* kTarget = "llvm -keys=cpu -mtriple=x86_64-linux-gnu -num-cores=8";

// Task t, program p: a split of tile 2^(p % 6), cost falling towards tile 8.
std::vector<core::Record> tiny_platform(int tasks, int per_task) {
  std::vector<core::Record> out;
  for (int t = 0; t < tasks; ++t) {
    for (int p = 0; p < per_task; ++p) {
      core::Record r;
      r.workload_key = "[\"fisher\", " + std::to_string(t) + "]";
      r.target = kTarget;
      core::Step sp;
      sp.kind = core::StepKind::kSplit;
      sp.extent = 64;
      sp.lengths = {std::int64_t{1} << (p % 6)};
      core::Step an;
      an.kind = core::StepKind::kAnnotation;
      an.iter_id = 1;
      an.annotation = p % 3;
      r.steps = p % 2 ? std::vector<core::Step>{sp, an} : std::vector<core::Step>{sp, an, sp};
      r.costs = {1e-3 * (1 + t) * (1.0 + 0.3 * std::abs(p % 6 - 3) + 0.05 * (p % 3))};
      out.push_back(r);
    }
  }
  return out;
}

ModelConfig tiny_student(const Dataset& ds) {
  ModelConfig c;
  c.token_dim = ds.token_dim;
  c.descriptor_dim = static_cast<std::int64_t>(ds.descriptor.size());
  c.d_model = 8;
  c.d_state = 4;
  c.film_hidden = 8;
  c.head_hidden = 8;
  c.dropout = 0.0;
  c.seed = 2;
  return c;
}

// Σ over batches of the squared gradient, per parameter entry, in double.
std::vector<double> direct_squared_gradients(ScoreModel& model, const Dataset& ds,
                                             const std::vector<ChunkBatch>& batches) {
  const DatasetSplit& s = ds.train;
  std::vector<double> sum;
  for (const ChunkBatch& chunks : batches) {
    std::vector<float> tokens, labels;
    std::vector<std::int64_t> lengths, groups;
    for (std::size_t k = 0; k < chunks.size(); ++k) {
      for (std::int64_t row : chunks[k]) {
        const auto r = static_cast<std::size_t>(row);
        const auto width = static_cast<std::size_t>(ds.seq_len * ds.token_dim);
        tokens.insert(tokens.end(), s.tokens.begin() + r * width, s.tokens.begin() + (r + 1) * width);
        lengths.push_back(s.lengths[r]);
        labels.push_back(s.labels[r]);
        groups.push_back(static_cast<std::int64_t>(k));
      }
    }
    const auto b = static_cast<std::int64_t>(lengths.size());
    const torch::Tensor descriptor =
        torch::tensor(ds.descriptor).view({1, static_cast<std::int64_t>(ds.descriptor.size())}).expand({b, -1});
    const torch::Tensor scores =
        model.forward(torch::tensor(tokens).view({b, ds.seq_len, ds.token_dim}), torch::tensor(lengths), descriptor);
    const torch::Tensor loss = lambda_rank_loss(scores, torch::tensor(labels), torch::tensor(groups), {});
    model.zero_grad();
    loss.backward();
    std::size_t i = 0;
    for (const torch::Tensor& p : model.parameters()) {
      const torch::Tensor g = p.grad().defined() ? p.grad().to(torch::kDouble).contiguous().view(-1)
                                                 : torch::zeros({p.numel()}, torch::kDouble);
      if (sum.size() < i + static_cast<std::size_t>(g.numel())) sum.resize(i + static_cast<std::size_t>(g.numel()));
      for (std::int64_t e = 0; e < g.numel(); ++e)
        sum[i + static_cast<std::size_t>(e)] += g[e].item<double>() * g[e].item<double>();
      i += static_cast<std::size_t>(g.numel());
    }
  }
  model.zero_grad();
  double mean = 0;
  for (double v : sum) mean += v;
  mean /= static_cast<double>(sum.size());
  for (double& v : sum) v /= mean;
  return sum;
}

TEST(FisherTest, MatchesTheSquaredGradientsOfEachBatch) {
  const std::vector<core::Record> records = tiny_platform(4, 18);
  auto ds = build_dataset(records, Platform{kTarget, std::nullopt}, DatasetOptions{});
  ASSERT_TRUE(ds.is_ok()) << ds.status().to_string();
  auto made = make_score_model(tiny_student(*ds));
  ASSERT_TRUE(made.is_ok()) << made.status().to_string();
  ScoreModel& model = **made;
  model.eval();

  const SplitTensors split = to_tensors(ds->train, *ds, torch::kCPU);
  SplitMix64 rng{5};
  std::vector<ChunkBatch> batches =
      epoch_batches(group_rows(ds->train), ds->train, BatchShape{.groups_per_batch = 2, .group_size = 7}, rng);
  ASSERT_GE(batches.size(), 3u);
  batches.resize(3);
  const std::vector<torch::Tensor> fisher =
      diagonal_fisher(model, split, descriptor_tensor(ds->descriptor, torch::kCPU), batches, {});
  const std::vector<double> expected = direct_squared_gradients(model, *ds, batches);

  ASSERT_EQ(fisher.size(), model.parameters().size());
  std::vector<double> got;
  for (const torch::Tensor& f : fisher) {
    const torch::Tensor c = f.to(torch::kDouble).contiguous();
    got.insert(got.end(), c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  }
  ASSERT_EQ(got.size(), expected.size());
  double mean = 0, worst = 0;
  int nonzero = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    mean += got[i];
    worst = std::max(worst, std::fabs(got[i] - expected[i]) / std::max(1.0, expected[i]));
    nonzero += expected[i] > 1e-6;
  }
  EXPECT_NEAR(mean / static_cast<double>(got.size()), 1.0, 1e-4);
  EXPECT_LT(worst, 1e-3);
  EXPECT_GT(nonzero, static_cast<int>(got.size()) / 2);  // the check is not over zeros
  for (const torch::Tensor& p : model.parameters()) {
    EXPECT_TRUE(!p.grad().defined() || p.grad().abs().max().item<double>() == 0.0);  // left zero
  }

  // Bytes and back: the same floats; a size that does not match is refused.
  const std::string bytes = fisher_bytes(fisher);
  EXPECT_EQ(bytes.size(), 4u * got.size());
  auto back = fisher_tensors(bytes, model);
  ASSERT_TRUE(back.is_ok());
  for (std::size_t k = 0; k < fisher.size(); ++k) EXPECT_TRUE(torch::equal((*back)[k], fisher[k]));
  EXPECT_EQ(fisher_tensors(std::string_view(bytes).substr(4), model).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(diagonal_fisher(model, split, descriptor_tensor(ds->descriptor, torch::kCPU), {}, {}).empty());
}

}  // namespace
}  // namespace tcl::trainer
