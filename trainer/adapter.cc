// trainer/adapter.cc
#include "trainer/adapter.h"

#include <ATen/CPUGeneratorImpl.h>

#include <string>
#include <unordered_map>

#include "trainer/layers.h"

namespace tcl::trainer {
namespace {

constexpr std::uint64_t kAdapterSeedSalt = 0xADA7ULL;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool adapted(std::string_view name, AdapterLayers layers) {
  if (layers == AdapterLayers::kAll) return true;
  return name.starts_with("blocks.") && (ends_with(name, ".in_proj") || ends_with(name, ".out_proj"));
}

}  // namespace

bool has_adapter(const ScoreModel& model) {
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    if (ends_with(item.key(), "lora_a")) return true;
  }
  return false;
}

Result<std::int64_t> add_adapter(ScoreModel& model, const AdapterOptions& options, std::uint64_t seed) {
  if (options.rank < 1 || options.rank > kMaxAdapterRank) {
    return Status::invalid_argument("train: adapter rank must be in [1, " + std::to_string(kMaxAdapterRank) + "]");
  }
  if (model.config().kind != ModelKind::kMamba)
    return Status::invalid_argument("train: an adapter needs a Mamba model");
  if (has_adapter(model)) return Status::invalid_argument("train: the model has an adapter already");
  for (torch::Tensor& p : model.parameters()) p.set_requires_grad(false);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed ^ kAdapterSeedSalt);
  std::int64_t added = 0;
  for (const auto& item : model.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    auto* dense = item.value()->as<DenseImpl>();
    if (dense == nullptr || !adapted(item.key(), options.layers)) continue;
    dense->add_low_rank(options.rank, gen);
    added += dense->lora_a.numel() + dense->lora_b.numel();
  }
  return added;
}

Result<std::shared_ptr<ScoreModel>> fold_adapter(const ScoreModel& model) {
  if (!has_adapter(model)) return Status::invalid_argument("train: the model has no adapter to fold");
  Result<std::shared_ptr<ScoreModel>> plain = make_score_model(model.config());
  if (!plain) return plain.status();
  std::unordered_map<std::string, torch::Tensor> trained;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) trained.emplace(item.key(), item.value());
  for (const auto& item : model.named_buffers(/*recurse=*/true)) trained.emplace(item.key(), item.value());
  torch::NoGradGuard no_grad;
  auto copy_into = [&](const std::string& name, torch::Tensor& into) {
    torch::Tensor value = trained.at(name);
    const std::string prefix = name.substr(0, name.size() - std::string_view("weight").size());
    if (ends_with(name, "weight") && trained.count(prefix + "lora_a")) {
      value = value + torch::mm(trained.at(prefix + "lora_b"), trained.at(prefix + "lora_a"));
    }
    into.copy_(value.to(torch::kCPU));
  };
  for (auto& item : (*plain)->named_parameters(/*recurse=*/true)) copy_into(item.key(), item.value());
  for (auto& item : (*plain)->named_buffers(/*recurse=*/true)) copy_into(item.key(), item.value());
  return plain;
}

}  // namespace tcl::trainer
