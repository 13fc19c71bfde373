// trainer/train_loop.cc
#include "trainer/train_loop.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <map>

#include "trainer/device_internal.h"
#include "trainer/optimizer.h"

namespace tcl::trainer {
namespace {

// Index tensors of each group's members, in ascending group-id order.
std::vector<torch::Tensor> group_members(const torch::Tensor& groups) {
  const torch::Tensor ids = groups.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t* id = ids.data_ptr<int64_t>();
  std::map<int64_t, std::vector<int64_t>> members;
  for (int64_t i = 0; i < ids.numel(); ++i) members[id[i]].push_back(i);
  std::vector<torch::Tensor> out;
  out.reserve(members.size());
  for (auto& [group, idx] : members) {
    out.push_back(torch::tensor(idx, torch::kLong));
  }
  return out;
}

void check_data(const RankingData& d) {
  TORCH_CHECK(d.tokens.dim() == 3, "ranking data: tokens must be [n, L, token_dim]");
  const int64_t n = d.tokens.size(0);
  for (const torch::Tensor* t : {&d.lengths, &d.labels, &d.groups}) {
    TORCH_CHECK(t->dim() == 1 && t->size(0) == n, "ranking data: expected [", n, "], got ",
                t->sizes());
  }
  TORCH_CHECK(d.descriptors.dim() == 2 && d.descriptors.size(0) == n,
              "ranking data: descriptors must be [n, descriptor_dim]");
}

}  // namespace

TrainStats train_ranking(ScoreModel& model, torch::optim::Optimizer& optimizer,
                         const RankingData& data, const TrainOptions& options) {
  check_data(data);
  const std::vector<torch::Tensor> members = group_members(data.groups);
  const int64_t n_groups = static_cast<int64_t>(members.size());
  TrainStats stats;
  if (n_groups == 0) return stats;
  const int64_t per_batch = std::clamp<int64_t>(options.groups_per_batch, 1, n_groups);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(options.seed);

  model.train();
  stats.step_losses.reserve(static_cast<size_t>(options.steps));
  std::vector<torch::Tensor> picked(static_cast<size_t>(per_batch));
  for (int64_t step = 0; step < options.steps; ++step) {
    const torch::Tensor order = torch::randperm(n_groups, gen, torch::kLong);
    const int64_t* g = order.data_ptr<int64_t>();
    for (int64_t k = 0; k < per_batch; ++k) picked[static_cast<size_t>(k)] = members[g[k]];
    const torch::Tensor idx = upload(torch::cat(picked), data.tokens.device());

    const torch::Tensor scores = model.forward(data.tokens.index_select(0, idx),
                                               data.lengths.index_select(0, idx),
                                               data.descriptors.index_select(0, idx));
    const torch::Tensor loss = lambda_rank_loss(scores, data.labels.index_select(0, idx),
                                                data.groups.index_select(0, idx), options.loss);
    optimizer.zero_grad();
    loss.backward();
    if (options.grad_clip_norm > 0) {
      clip_grad_norm(model.parameters(), options.grad_clip_norm);
    }
    optimizer.step();
    stats.step_losses.push_back(loss.item<double>());
  }
  model.eval();
  return stats;
}

double ranking_loss(ScoreModel& model, const RankingData& data, const LambdaRankOptions& options) {
  check_data(data);
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const torch::Tensor scores = model.forward(data.tokens, data.lengths, data.descriptors);
  const double loss = lambda_rank_loss(scores, data.labels, data.groups, options).item<double>();
  model.train(was_training);
  return loss;
}

}  // namespace tcl::trainer
