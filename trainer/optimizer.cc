// trainer/optimizer.cc
#include "trainer/optimizer.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace tcl::trainer {
namespace {

bool decays(const std::string& name, const torch::Tensor& p) {
  if (p.dim() < 2) return false;
  const size_t dot = name.rfind('.');
  const std::string_view own =
      dot == std::string::npos ? std::string_view(name) : std::string_view(name).substr(dot + 1);
  for (const char* exempt : kNoDecayNames) {
    if (own == exempt) return false;
  }
  return true;
}

}  // namespace

DecaySplit split_weight_decay(const torch::nn::Module& model) {
  DecaySplit split;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    const torch::Tensor& p = item.value();
    if (!p.requires_grad()) continue;
    if (decays(item.key(), p)) {
      split.decay_names.push_back(item.key());
      split.decay.push_back(p);
    } else {
      split.no_decay_names.push_back(item.key());
      split.no_decay.push_back(p);
    }
  }
  return split;
}

std::unique_ptr<torch::optim::AdamW> make_adamw(const torch::nn::Module& model, const AdamWConfig& config) {
  DecaySplit split = split_weight_decay(model);
  const auto options = [&](double weight_decay) {
    auto o = std::make_unique<torch::optim::AdamWOptions>(config.lr);
    o->betas({config.beta1, config.beta2}).eps(config.eps).weight_decay(weight_decay);
    return o;
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::move(split.decay), options(config.weight_decay));
  groups.emplace_back(std::move(split.no_decay), options(0.0));
  torch::optim::AdamWOptions defaults(config.lr);
  defaults.betas({config.beta1, config.beta2}).eps(config.eps).weight_decay(config.weight_decay);
  return std::make_unique<torch::optim::AdamW>(std::move(groups), defaults);
}

void clip_grad_norm(const std::vector<torch::Tensor>& parameters, double max_norm) {
  std::vector<torch::Tensor> grads, norms;
  for (const torch::Tensor& p : parameters) {
    if (!p.grad().defined()) continue;
    grads.push_back(p.grad().data());
    norms.push_back(grads.back().norm(2));
  }
  if (grads.empty()) return;
  const torch::Tensor total = norms.size() == 1 ? norms[0] : torch::stack(norms).norm(2);
  const torch::Tensor scale = torch::clamp_max(max_norm / (total + 1e-6), 1.0);
  for (torch::Tensor& g : grads) g.mul_(scale);
}

WeightAverage::WeightAverage(const std::vector<torch::Tensor>& parameters, double decay)
    : parameters_(parameters), decay_(decay) {
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& p : parameters_) average_.push_back(p.detach().clone());
}

void WeightAverage::update() {
  torch::NoGradGuard no_grad;
  ++steps_;
  const double t = static_cast<double>(steps_);
  const double d = std::min(decay_, (1.0 + t) / (10.0 + t));
  for (std::size_t i = 0; i < parameters_.size(); ++i) average_[i].lerp_(parameters_[i].detach(), 1.0 - d);
}

void WeightAverage::swap() {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const torch::Tensor live = parameters_[i].detach().clone();
    parameters_[i].detach().copy_(average_[i]);
    average_[i] = live;
  }
}

}  // namespace tcl::trainer
