// trainer/adapter.cc
#include "trainer/adapter.h"

#include <ATen/CPUGeneratorImpl.h>

#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
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

// The adapted layers of a model with an adapter, by module name, in module order.
std::vector<std::pair<std::string, DenseImpl*>> adapted_layers(const ScoreModel& model) {
  std::vector<std::pair<std::string, DenseImpl*>> out;
  for (const auto& item : model.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    auto* dense = item.value()->as<DenseImpl>();
    if (dense != nullptr && dense->lora_a.defined()) out.emplace_back(item.key(), dense);
  }
  return out;
}

// Every Dense layer of a model by module name.
std::unordered_map<std::string, DenseImpl*> dense_layers(const ScoreModel& model) {
  std::unordered_map<std::string, DenseImpl*> out;
  for (const auto& item : model.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    if (auto* d = item.value()->as<DenseImpl>()) out.emplace(item.key(), d);
  }
  return out;
}

// A copy of `model`'s parameters and buffers in a fresh model of its config
// (CPU, eval mode); an adapter's tensors are not copied (the fresh model has none).
Result<std::shared_ptr<ScoreModel>> copy_of(const ScoreModel& model) {
  Result<std::shared_ptr<ScoreModel>> copy = make_score_model(model.config());
  if (!copy) return copy.status();
  std::unordered_map<std::string, torch::Tensor> from;
  for (const auto& item : model.named_parameters()) from.emplace(item.key(), item.value());
  for (const auto& item : model.named_buffers()) from.emplace(item.key(), item.value());
  torch::NoGradGuard no_grad;
  for (auto& item : (*copy)->named_parameters()) item.value().copy_(from.at(item.key()).to(torch::kCPU));
  for (auto& item : (*copy)->named_buffers()) item.value().copy_(from.at(item.key()).to(torch::kCPU));
  return copy;
}

// FNV-1a over the bytes of every parameter but the adapter's, in name order:
// which trunk an adapter was trained on (the same weights give the same value
// on every machine; float bytes are compared as they are).
int64_t trunk_fingerprint(const ScoreModel& model) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const auto& item : model.named_parameters()) {
    if (item.key().find("lora_") != std::string::npos) continue;
    const torch::Tensor t = item.value().detach().to(torch::kCPU).contiguous();
    const auto* bytes = static_cast<const unsigned char*>(t.data_ptr());
    for (std::size_t i = 0; i < static_cast<std::size_t>(t.numel() * t.element_size()); ++i) {
      h = (h ^ bytes[i]) * 0x100000001b3ULL;
    }
  }
  return static_cast<int64_t>(h);
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
  const auto layers = adapted_layers(model);
  if (layers.empty()) return Status::invalid_argument("train: the model has no adapter to fold");
  Result<std::shared_ptr<ScoreModel>> plain = copy_of(model);  // W as trained, the adapter left out
  if (!plain) return plain.status();
  const auto dense = dense_layers(**plain);
  torch::NoGradGuard no_grad;
  for (const auto& [name, layer] : layers) {
    // B·A on the CPU, as rank-1 products added in a fixed order: elementwise
    // operations only, so every fold of an adapter (every model cache load,
    // every gate run, any machine) gives the same bits. A BLAS product may
    // sum in another order from one call to the next: with it, two folds of
    // one adapter on the GPU machine scored a platform's tuning proxy 1e-4
    // apart (bench_continual, session 29).
    const torch::Tensor b = layer->lora_b.to(torch::kCPU), a = layer->lora_a.to(torch::kCPU);
    torch::Tensor delta = torch::zeros_like(dense.at(name)->weight);
    for (std::int64_t k = 0; k < a.size(0); ++k) delta.add_(b.select(1, k).unsqueeze(1) * a.select(0, k).unsqueeze(0));
    dense.at(name)->weight.add_(delta);
  }
  return plain;
}

Result<std::string> save_adapter(const ScoreModel& model) {
  const auto layers = adapted_layers(model);
  if (layers.empty()) return Status::invalid_argument("train: the model has no adapter to save");
  torch::serialize::OutputArchive archive;
  archive.write("format", c10::IValue(kAdapterFormat));
  archive.write("config", c10::IValue(config_to_text(model.config())));
  archive.write("trunk", c10::IValue(trunk_fingerprint(model)));
  c10::List<std::string> names;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    names.push_back(layers[i].first);
    archive.write("a_" + std::to_string(i), layers[i].second->lora_a.detach().to(torch::kCPU), /*is_buffer=*/true);
    archive.write("b_" + std::to_string(i), layers[i].second->lora_b.detach().to(torch::kCPU), /*is_buffer=*/true);
  }
  archive.write("layers", c10::IValue(names));
  std::ostringstream out;
  archive.save_to(out);
  return std::move(out).str();
}

Result<std::shared_ptr<ScoreModel>> apply_adapter(const ScoreModel& trunk, std::string_view bytes) {
  if (has_adapter(trunk)) return Status::invalid_argument("adapter: the trunk has an unfolded adapter");
  torch::serialize::InputArchive archive;
  c10::IValue format, config, fingerprint, layers;
  try {
    archive.load_from(bytes.data(), bytes.size());
    if (!archive.try_read("format", format) || !format.isInt() || format.toInt() != kAdapterFormat ||
        !archive.try_read("config", config) || !config.isString() || !archive.try_read("trunk", fingerprint) ||
        !fingerprint.isInt() || !archive.try_read("layers", layers) || !layers.isList()) {
      return Status::data_loss("adapter: not an adapter (format, config, trunk, layers)");
    }
  } catch (const std::exception& e) {
    return Status::data_loss(std::string("adapter: unreadable archive: ") + e.what());
  }
  Result<ModelConfig> trained_on = config_from_text(config.toStringRef());
  if (!trained_on) return Status::data_loss("adapter: " + trained_on.status().message());
  if (!same_layout(*trained_on, trunk.config()) || fingerprint.toInt() != trunk_fingerprint(trunk))
    return Status::invalid_argument("adapter: trained on another trunk than this one");
  Result<std::shared_ptr<ScoreModel>> copy = copy_of(trunk);
  if (!copy) return copy.status();
  const auto dense = dense_layers(**copy);
  const c10::List<c10::IValue> names = layers.toList();
  if (names.size() == 0) return Status::data_loss("adapter: no layer");
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(0);  // A is overwritten below
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const c10::IValue name = names.get(i);
    torch::Tensor a, b;
    const auto it = name.isString() ? dense.find(name.toStringRef()) : dense.end();
    if (it == dense.end() || it->second->lora_a.defined() || !archive.try_read("a_" + std::to_string(i), a) ||
        !archive.try_read("b_" + std::to_string(i), b) || a.dim() != 2 || b.dim() != 2 || a.size(0) != b.size(1) ||
        a.size(0) < 1 || a.scalar_type() != torch::kFloat || b.scalar_type() != torch::kFloat) {
      return Status::data_loss("adapter: layer " + std::to_string(i) + " is not one of this trunk's");
    }
    DenseImpl* layer = it->second;
    layer->add_low_rank(a.size(0), gen);
    if (!a.sizes().equals(layer->lora_a.sizes()) || !b.sizes().equals(layer->lora_b.sizes()))
      return Status::data_loss("adapter: layer " + std::to_string(i) + "'s tensors do not fit the trunk");
    layer->lora_a.copy_(a);
    layer->lora_b.copy_(b);
  }
  return fold_adapter(**copy);
}

}  // namespace tcl::trainer
