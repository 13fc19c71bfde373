// trainer/score_model.cc
#include "trainer/score_model.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cstring>
#include <map>
#include <sstream>
#include <vector>

#include "trainer/attention_model.h"
#include "trainer/mlp_model.h"
#include "trainer/model.h"

namespace tcl::trainer {
namespace {

// Checkpoint layout version; bump when the archive's keys change meaning.
// Format 2 is format 1 plus per-platform adapters; format 3 is format 2 plus
// per-platform pinned models (its adapter list may be empty).
constexpr int64_t kCheckpointFormat = 1;
constexpr int64_t kCheckpointFormatWithAdapters = 2;
constexpr int64_t kCheckpointFormatWithPinned = 3;

// `bytes` as a uint8 tensor (an archive's way to hold a blob), and back.
torch::Tensor blob_tensor(const std::string& bytes) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  if (!bytes.empty()) std::memcpy(t.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return t;
}
std::string tensor_blob(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  return std::string(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()), static_cast<std::size_t>(c.numel()));
}

// The archive of a checkpoint and its format; kDataLoss when it is not one.
Result<int64_t> open_checkpoint(std::string_view bytes, torch::serialize::InputArchive* archive) {
  try {
    archive->load_from(bytes.data(), bytes.size());
    c10::IValue format;
    if (!archive->try_read("format", format) || !format.isInt()) {
      return Status::data_loss("checkpoint: no format version (not a TCL checkpoint)");
    }
    if (format.toInt() < kCheckpointFormat || format.toInt() > kCheckpointFormatWithPinned) {
      return Status::data_loss("checkpoint: format " + std::to_string(format.toInt()) + " is not supported (expected " +
                               std::to_string(kCheckpointFormat) + " to " +
                               std::to_string(kCheckpointFormatWithPinned) + ")");
    }
    return format.toInt();
  } catch (const std::exception& e) {
    return Status::data_loss(std::string("checkpoint: unreadable archive: ") + e.what());
  }
}

// The dropout stream is seeded apart from the init stream.
constexpr uint64_t kDropoutSeedSalt = 0x9E3779B97F4A7C15ULL;

}  // namespace

ScoreModel::ScoreModel(const ModelConfig& config)
    : config_(config), dropout_gen_(at::make_generator<at::CPUGeneratorImpl>(config.seed ^ kDropoutSeedSalt)) {
  head_ = register_module("head", ConditionedHead(config.d_model, config.descriptor_dim, config.film_hidden,
                                                  config.head_hidden, config.dropout));
}

at::Generator ScoreModel::init_generator() const { return at::make_generator<at::CPUGeneratorImpl>(config_.seed); }

void ScoreModel::reset_head(at::Generator& gen) { head_->reset_parameters(gen); }

int64_t ScoreModel::num_parameters() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

void ScoreModel::check_inputs(const torch::Tensor& tokens, const torch::Tensor& lengths,
                              const torch::Tensor& descriptor) const {
  TORCH_CHECK(tokens.dim() == 3 && tokens.size(2) == config_.token_dim, "score model: tokens must be [B, L, ",
              config_.token_dim, "], got ", tokens.sizes());
  TORCH_CHECK(tokens.is_floating_point(), "score model: tokens must be floating point");
  TORCH_CHECK(tokens.size(1) <= config_.max_len, "score model: sequence length ", tokens.size(1), " exceeds max_len ",
              config_.max_len);
  const int64_t B = tokens.size(0);
  TORCH_CHECK(lengths.dim() == 1 && lengths.size(0) == B, "score model: lengths must be [", B, "], got ",
              lengths.sizes());
  TORCH_CHECK(!lengths.is_floating_point(), "score model: lengths must be integers");
  TORCH_CHECK(descriptor.dim() == 2 && descriptor.size(0) == B && descriptor.size(1) == config_.descriptor_dim,
              "score model: descriptor must be [", B, ", ", config_.descriptor_dim, "], got ", descriptor.sizes());
  // Read on the CPU only: off it, the two reads would stall every forward
  // until the device catches up (callers there pass lengths they built).
  if (B > 0 && lengths.device().is_cpu()) {
    TORCH_CHECK(lengths.min().item<int64_t>() >= 0 && lengths.max().item<int64_t>() <= tokens.size(1),
                "score model: lengths must be in [0, ", tokens.size(1), "]");
  }
}

torch::Tensor ScoreModel::embed(const torch::Tensor& tokens, const torch::Tensor& lengths,
                                const torch::Tensor& descriptor) {
  check_inputs(tokens, lengths, descriptor);
  return head_->condition(encode(tokens, lengths), descriptor);
}

std::vector<torch::Tensor> ScoreModel::embed_each(const torch::Tensor& tokens, const torch::Tensor& lengths,
                                                  const std::vector<torch::Tensor>& descriptors) {
  std::vector<torch::Tensor> out;
  if (descriptors.empty()) return out;
  for (const torch::Tensor& d : descriptors) check_inputs(tokens, lengths, d);
  const torch::Tensor pooled = encode(tokens, lengths);
  for (const torch::Tensor& d : descriptors) out.push_back(head_->condition(pooled, d));
  return out;
}

torch::Tensor ScoreModel::scores(const torch::Tensor& tokens, const torch::Tensor& lengths,
                                 const torch::Tensor& descriptor, bool dropout_active) {
  return head_->score(embed(tokens, lengths, descriptor), dropout_active, dropout_gen_);
}

torch::Tensor ScoreModel::forward(const torch::Tensor& tokens, const torch::Tensor& lengths,
                                  const torch::Tensor& descriptor) {
  return scores(tokens, lengths, descriptor, is_training());
}

torch::Tensor ScoreModel::score_embedding(const torch::Tensor& embedding) {
  return head_->score(embedding, is_training(), dropout_gen_);
}

torch::Tensor ScoreModel::forward_mc(const torch::Tensor& tokens, const torch::Tensor& lengths,
                                     const torch::Tensor& descriptor) {
  return scores(tokens, lengths, descriptor, /*dropout_active=*/true);
}

Result<std::shared_ptr<ScoreModel>> make_score_model(const ModelConfig& config) {
  if (Status s = validate(config); !s) return s;
  std::shared_ptr<ScoreModel> model;
  switch (config.kind) {
    case ModelKind::kMamba: model = std::make_shared<MambaStudent>(config); break;
    case ModelKind::kAttention: model = std::make_shared<AttentionModel>(config); break;
    case ModelKind::kMlp: model = std::make_shared<MlpModel>(config); break;
  }
  if (!model) return Status::invalid_argument("model config: unknown kind");
  model->eval();
  return model;
}

Status mix_weights(ScoreModel& into, const ScoreModel& from, double share) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> a = into.parameters(), b = from.parameters();
  for (const torch::Tensor& t : into.buffers()) a.push_back(t);
  for (const torch::Tensor& t : from.buffers()) b.push_back(t);
  if (a.size() != b.size()) return Status::invalid_argument("the two models differ in shape");
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].sizes().equals(b[i].sizes())) return Status::invalid_argument("the two models differ in shape");
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].is_floating_point()) a[i].mul_(1.0 - share).add_(b[i].to(a[i].device()), share);
  }
  return Status::ok();
}

std::string save_score_model(const ScoreModel& model, const CheckpointAdapters& adapters,
                             const CheckpointPinned& pinned) {
  for (const auto& p : model.named_parameters()) {
    TORCH_CHECK(p.value().device().is_cpu(), "save_score_model: move the model to the CPU first (parameter on ",
                p.value().device(), ")");
    // A reader would load the trunk alone: fold it, or save it apart (trainer/adapter.h).
    TORCH_CHECK(p.key().find("lora_") == std::string::npos, "save_score_model: the model has an unfolded adapter");
  }
  torch::serialize::OutputArchive archive;
  const int64_t format = !pinned.empty()     ? kCheckpointFormatWithPinned
                         : !adapters.empty() ? kCheckpointFormatWithAdapters
                                             : kCheckpointFormat;
  archive.write("format", c10::IValue(format));
  archive.write("config", c10::IValue(config_to_text(model.config())));
  torch::serialize::OutputArchive weights(archive.compilation_unit());
  model.save(weights);
  archive.write("model", weights);
  // Each kind of per-platform entry: "<kind>_platforms" names, "<kind>_<i>" blobs.
  const auto write_entries = [&archive](const std::string& kind,
                                        const std::map<std::string, std::string, std::less<>>& entries) {
    c10::List<std::string> names;
    int i = 0;
    for (const auto& [platform, bytes] : entries) {
      names.push_back(platform);
      archive.write(kind + "_" + std::to_string(i++), blob_tensor(bytes), /*is_buffer=*/true);
    }
    archive.write(kind + "_platforms", c10::IValue(names));
  };
  if (format >= kCheckpointFormatWithAdapters) write_entries("adapter", adapters);
  if (format >= kCheckpointFormatWithPinned) write_entries("pinned", pinned);
  std::ostringstream out;
  archive.save_to(out);
  return std::move(out).str();
}

namespace {

// The "<kind>_platforms" / "<kind>_<i>" entries of a checkpoint of at least
// `since` (fewer: none).
Result<std::map<std::string, std::string, std::less<>>> load_entries(std::string_view bytes, const std::string& kind,
                                                                     int64_t since) {
  torch::serialize::InputArchive archive;
  Result<int64_t> format = open_checkpoint(bytes, &archive);
  if (!format) return format.status();
  std::map<std::string, std::string, std::less<>> out;
  if (*format < since) return out;
  try {
    c10::IValue names;
    if (!archive.try_read(kind + "_platforms", names) || !names.isList())
      return Status::data_loss("checkpoint: format " + std::to_string(*format) + " without its " + kind +
                               "s' platforms");
    const c10::List<c10::IValue> list = names.toList();
    for (std::size_t i = 0; i < list.size(); ++i) {
      const c10::IValue name = list.get(i);
      torch::Tensor blob;
      if (!name.isString() || !archive.try_read(kind + "_" + std::to_string(i), blob) ||
          blob.scalar_type() != torch::kUInt8 || blob.dim() != 1) {
        return Status::data_loss("checkpoint: " + kind + " " + std::to_string(i) + " is malformed");
      }
      out.emplace(name.toStringRef(), tensor_blob(blob));
    }
  } catch (const std::exception& e) {
    return Status::data_loss("checkpoint: unreadable " + kind + "s: " + e.what());
  }
  return out;
}

}  // namespace

Result<CheckpointAdapters> load_checkpoint_adapters(std::string_view bytes) {
  return load_entries(bytes, "adapter", kCheckpointFormatWithAdapters);
}

Result<CheckpointPinned> load_checkpoint_pinned(std::string_view bytes) {
  return load_entries(bytes, "pinned", kCheckpointFormatWithPinned);
}

Result<std::shared_ptr<ScoreModel>> load_score_model(std::string_view bytes) {
  torch::serialize::InputArchive archive;
  Result<int64_t> format = open_checkpoint(bytes, &archive);
  if (!format) return format.status();
  if (*format != kCheckpointFormat) {
    return Status::invalid_argument(
        "checkpoint: it keeps per-platform adapters or pinned models; load a platform's model "
        "(CostModel::load_for_platform)");
  }
  return load_trunk(bytes);
}

Result<std::shared_ptr<ScoreModel>> load_trunk(std::string_view bytes) {
  torch::serialize::InputArchive archive;
  std::string config_text;
  if (Result<int64_t> format = open_checkpoint(bytes, &archive); !format) return format.status();
  try {
    c10::IValue config;
    if (!archive.try_read("config", config) || !config.isString()) {
      return Status::data_loss("checkpoint: no model config");
    }
    config_text = config.toStringRef();
  } catch (const std::exception& e) {
    return Status::data_loss(std::string("checkpoint: unreadable archive: ") + e.what());
  }

  Result<ModelConfig> config = config_from_text(config_text);
  if (!config) return config.status().with_context("checkpoint");
  Result<std::shared_ptr<ScoreModel>> made = make_score_model(*config);
  if (!made) return made.status().with_context("checkpoint");
  std::shared_ptr<ScoreModel> model = *made;

  // Module::load replaces each tensor without checking its shape, so record
  // the shapes the config implies and compare afterwards.
  std::map<std::string, std::vector<int64_t>> expected;
  for (const auto& p : model->named_parameters()) expected[p.key()] = p.value().sizes().vec();
  try {
    torch::serialize::InputArchive weights;
    if (!archive.try_read("model", weights)) return Status::data_loss("checkpoint: no weights");
    model->load(weights);
  } catch (const std::exception& e) {
    return Status::data_loss(std::string("checkpoint: weights do not match the config: ") + e.what());
  }
  for (const auto& p : model->named_parameters()) {
    const auto it = expected.find(p.key());
    if (it == expected.end() || it->second != p.value().sizes().vec() || p.value().scalar_type() != torch::kFloat) {
      return Status::data_loss("checkpoint: parameter '" + p.key() + "' has the wrong shape or dtype for its config");
    }
  }
  model->eval();
  return model;
}

}  // namespace tcl::trainer
