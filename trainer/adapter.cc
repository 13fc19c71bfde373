// trainer/adapter.cc
#include "trainer/adapter.h"

#include <ATen/CPUGeneratorImpl.h>

#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

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

constexpr int64_t kAdapterFormat = 1;

// The adapted layers of a model with an adapter, in module order.
std::vector<DenseImpl*> adapted_layers(const ScoreModel& model) {
  std::vector<DenseImpl*> out;
  for (const auto& item : model.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    auto* dense = item.value()->as<DenseImpl>();
    if (dense != nullptr && dense->lora_a.defined()) out.push_back(dense);
  }
  return out;
}

// A copy of `model`'s weights in a fresh model of its config (CPU, eval mode).
Result<std::shared_ptr<ScoreModel>> copy_of(const ScoreModel& model) {
  Result<std::shared_ptr<ScoreModel>> copy = make_score_model(model.config());
  if (!copy) return copy.status();
  if (Status s = mix_weights(**copy, model, 1.0); !s) return s;
  return copy;
}

bool same_layout(ModelConfig a, ModelConfig b) {
  a.seed = b.seed = 0;
  return config_to_text(a) == config_to_text(b);
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
  std::vector<DenseImpl*> chosen;
  for (const auto& item : model.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    auto* dense = item.value()->as<DenseImpl>();
    if (dense != nullptr && adapted(item.key(), options.layers)) chosen.push_back(dense);
  }
  if (chosen.empty()) return Status::invalid_argument("train: the model has no layer the adapter adapts");
  for (torch::Tensor& p : model.parameters()) p.set_requires_grad(false);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed ^ kAdapterSeedSalt);
  std::int64_t added = 0;
  for (DenseImpl* dense : chosen) {
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

Result<std::string> save_adapter(const ScoreModel& model) {
  const std::vector<DenseImpl*> layers = adapted_layers(model);
  if (layers.empty()) return Status::invalid_argument("train: the model has no adapter to save");
  torch::serialize::OutputArchive archive;
  archive.write("format", c10::IValue(kAdapterFormat));
  archive.write("config", c10::IValue(config_to_text(model.config())));
  archive.write("rank", c10::IValue(layers.front()->lora_a.size(0)));
  // kAll adapts every Dense; kBlocks only the blocks' in_proj and out_proj.
  int64_t dense = 0;
  for (const auto& item : model.named_modules("", false)) dense += item.value()->as<DenseImpl>() != nullptr ? 1 : 0;
  const AdapterLayers kind =
      static_cast<int64_t>(layers.size()) == dense ? AdapterLayers::kAll : AdapterLayers::kBlocks;
  archive.write("layers", c10::IValue(std::string(adapter_layers_name(kind))));
  archive.write("count", c10::IValue(static_cast<int64_t>(layers.size())));
  for (std::size_t i = 0; i < layers.size(); ++i) {
    archive.write("a_" + std::to_string(i), layers[i]->lora_a.detach().to(torch::kCPU), /*is_buffer=*/true);
    archive.write("b_" + std::to_string(i), layers[i]->lora_b.detach().to(torch::kCPU), /*is_buffer=*/true);
  }
  std::ostringstream out;
  archive.save_to(out);
  return std::move(out).str();
}

Result<std::shared_ptr<ScoreModel>> apply_adapter(const ScoreModel& trunk, std::string_view bytes) {
  torch::serialize::InputArchive archive;
  c10::IValue format, config, rank, layers, count;
  try {
    archive.load_from(bytes.data(), bytes.size());
    if (!archive.try_read("format", format) || !format.isInt() || format.toInt() != kAdapterFormat ||
        !archive.try_read("config", config) || !config.isString() || !archive.try_read("rank", rank) || !rank.isInt() ||
        !archive.try_read("layers", layers) || !layers.isString() || !archive.try_read("count", count) ||
        !count.isInt()) {
      return Status::data_loss("adapter: not an adapter (format, config, rank, layers, count)");
    }
  } catch (const std::exception& e) {
    return Status::data_loss(std::string("adapter: unreadable archive: ") + e.what());
  }
  Result<ModelConfig> trained_on = config_from_text(config.toStringRef());
  if (!trained_on) return Status::data_loss("adapter: " + trained_on.status().message());
  if (!same_layout(*trained_on, trunk.config()))
    return Status::invalid_argument("adapter: trained on another model layout than this trunk's");
  const std::optional<AdapterLayers> kind = parse_adapter_layers(layers.toStringRef());
  if (!kind || rank.toInt() < 1 || rank.toInt() > kMaxAdapterRank)
    return Status::data_loss("adapter: bad rank or layers");
  Result<std::shared_ptr<ScoreModel>> copy = copy_of(trunk);
  if (!copy) return copy.status();
  if (Result<std::int64_t> added = add_adapter(**copy, {static_cast<int>(rank.toInt()), *kind}, 0); !added)
    return added.status();
  const std::vector<DenseImpl*> adapted = adapted_layers(**copy);
  if (static_cast<int64_t>(adapted.size()) != count.toInt())
    return Status::data_loss("adapter: " + std::to_string(count.toInt()) + " layers for " +
                             std::to_string(adapted.size()));
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < adapted.size(); ++i) {
    torch::Tensor a, b;
    if (!archive.try_read("a_" + std::to_string(i), a) || !archive.try_read("b_" + std::to_string(i), b) ||
        !a.sizes().equals(adapted[i]->lora_a.sizes()) || !b.sizes().equals(adapted[i]->lora_b.sizes()) ||
        a.scalar_type() != torch::kFloat || b.scalar_type() != torch::kFloat) {
      return Status::data_loss("adapter: layer " + std::to_string(i) + "'s tensors do not fit the trunk");
    }
    adapted[i]->lora_a.copy_(a);
    adapted[i]->lora_b.copy_(b);
  }
  return fold_adapter(**copy);
}

}  // namespace tcl::trainer
