// trainer/cost_model.cc — spans → tensors at the boundary (no copies of the
// token buffer: from_blob over the caller's memory), inference in chunks
// under NoGradGuard, and every torch exception turned into a Status here.
#include "trainer/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <utility>

#include <torch/torch.h>

#include "trainer/adapter.h"
#include "trainer/model_config.h"
#include "trainer/score_model.h"

namespace tcl::trainer {
namespace {

// Programs per forward pass. Small chunks keep the activations in cache:
// for the default student at L = 72 on one core, 16–32 programs per pass
// run at ~0.5 ms per program, 256 at ~0.9 ms, 1024 at ~1.1 ms.
constexpr int64_t kChunk = 32;

std::string size_text(size_t got, int64_t want) {
  return "got " + std::to_string(got) + " values, expected " + std::to_string(want);
}

}  // namespace

Status check_batch(const FeatureBatch& b, const ModelConfig& c) {
  if (b.count < 0) return Status::invalid_argument("batch: negative count");
  if (b.seq_len < 1 || b.seq_len > c.max_len) {
    return Status::invalid_argument("batch: seq_len " + std::to_string(b.seq_len) + " outside [1, " +
                                    std::to_string(c.max_len) + "]");
  }
  if (static_cast<int64_t>(b.tokens.size()) != b.count * b.seq_len * c.token_dim) {
    return Status::invalid_argument("batch: tokens: " + size_text(b.tokens.size(), b.count * b.seq_len * c.token_dim));
  }
  if (static_cast<int64_t>(b.lengths.size()) != b.count) {
    return Status::invalid_argument("batch: lengths: " + size_text(b.lengths.size(), b.count));
  }
  const int64_t nd = static_cast<int64_t>(b.descriptors.size());
  if (nd != c.descriptor_dim && nd != b.count * c.descriptor_dim) {
    return Status::invalid_argument("batch: descriptors: " +
                                    size_text(b.descriptors.size(), b.count * c.descriptor_dim));
  }
  for (int64_t i = 0; i < b.count; ++i) {
    if (b.lengths[i] < 0 || b.lengths[i] > b.seq_len) {
      return Status::invalid_argument("batch: program " + std::to_string(i) + " has length " +
                                      std::to_string(b.lengths[i]) + " outside [0, " + std::to_string(b.seq_len) + "]");
    }
  }
  return Status::ok();
}

struct CostModel::Impl {
  std::shared_ptr<ScoreModel> model;

  // Calls fn(tokens, lengths, descriptors, begin, size) per chunk of programs.
  template <typename Fn>
  Status for_chunks(const FeatureBatch& b, Fn&& fn) const {
    if (Status s = check_batch(b, model->config()); !s) return s;
    const ModelConfig& c = model->config();
    try {
      torch::NoGradGuard no_grad;
      // from_blob does not copy; the model only reads its inputs.
      const torch::Tensor tokens =
          torch::from_blob(const_cast<float*>(b.tokens.data()), {b.count, b.seq_len, c.token_dim}, torch::kFloat);
      const torch::Tensor lengths =
          torch::from_blob(const_cast<int32_t*>(b.lengths.data()), {b.count}, torch::kInt).to(torch::kLong);
      torch::Tensor desc = torch::from_blob(
          const_cast<float*>(b.descriptors.data()),
          {static_cast<int64_t>(b.descriptors.size()) / c.descriptor_dim, c.descriptor_dim}, torch::kFloat);
      const bool shared_desc = desc.size(0) != b.count || b.count == 0;
      for (int64_t begin = 0; begin < b.count; begin += kChunk) {
        const int64_t size = std::min(kChunk, b.count - begin);
        const torch::Tensor d = shared_desc ? desc.expand({size, c.descriptor_dim}) : desc.narrow(0, begin, size);
        fn(tokens.narrow(0, begin, size), lengths.narrow(0, begin, size), d, begin, size);
      }
    } catch (const std::exception& e) {
      return Status::internal(std::string("cost model: ") + e.what());
    }
    return Status::ok();
  }
};

CostModel::CostModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CostModel::~CostModel() = default;

Result<std::unique_ptr<CostModel>> CostModel::create(const ModelConfig& config) {
  try {
    Result<std::shared_ptr<ScoreModel>> model = make_score_model(config);
    if (!model) return model.status();
    return wrap(std::move(*model));
  } catch (const std::exception& e) {
    return Status::internal(std::string("cost model: ") + e.what());
  }
}

Result<std::unique_ptr<CostModel>> CostModel::load(std::string_view checkpoint) {
  try {
    Result<std::shared_ptr<ScoreModel>> model = load_score_model(checkpoint);
    if (!model) return model.status();
    return wrap(std::move(*model));
  } catch (const std::exception& e) {
    return Status::data_loss(std::string("cost model: ") + e.what());
  }
}

Result<std::unique_ptr<CostModel>> CostModel::load_for_platform(std::string_view checkpoint,
                                                                std::string_view platform) {
  try {
    Result<std::shared_ptr<ScoreModel>> trunk = load_trunk(checkpoint);
    if (!trunk) return trunk.status();
    Result<CheckpointPinned> pinned = load_checkpoint_pinned(checkpoint);
    if (!pinned) return pinned.status();
    if (const auto own = pinned->find(platform); !platform.empty() && own != pinned->end()) {
      Result<std::shared_ptr<ScoreModel>> model = load_score_model(own->second);
      if (!model) return Status::data_loss("platform " + std::string(platform) + ": " + model.status().message());
      return wrap(std::move(*model));
    }
    Result<CheckpointAdapters> adapters = load_checkpoint_adapters(checkpoint);
    if (!adapters) return adapters.status();
    const auto it = adapters->find(platform);
    if (it == adapters->end()) return wrap(std::move(*trunk));
    Result<std::shared_ptr<ScoreModel>> adapted = apply_adapter(**trunk, it->second);
    if (!adapted) return Status::data_loss("platform " + std::string(platform) + ": " + adapted.status().message());
    return wrap(std::move(*adapted));
  } catch (const std::exception& e) {
    return Status::data_loss(std::string("cost model: ") + e.what());
  }
}

std::unique_ptr<CostModel> CostModel::wrap(std::shared_ptr<ScoreModel> model) {
  auto impl = std::make_unique<Impl>();
  impl->model = std::move(model);
  impl->model->eval();  // predict() never drops; predict_mc() drops on purpose
  return std::unique_ptr<CostModel>(new CostModel(std::move(impl)));
}

std::shared_ptr<ScoreModel> CostModel::score_model() const { return impl_->model; }

const ModelConfig& CostModel::config() const { return impl_->model->config(); }

int64_t CostModel::num_parameters() const { return impl_->model->num_parameters(); }

Result<std::string> CostModel::save() const {
  try {
    return save_score_model(*impl_->model);
  } catch (const std::exception& e) {
    return Status::internal(std::string("cost model: save: ") + e.what());
  }
}

Status CostModel::predict(const FeatureBatch& batch, std::span<float> scores) const {
  if (static_cast<int64_t>(scores.size()) != batch.count) {
    return Status::invalid_argument("predict: scores: " + size_text(scores.size(), batch.count));
  }
  return impl_->for_chunks(
      batch, [&](const torch::Tensor& t, const torch::Tensor& l, const torch::Tensor& d, int64_t begin, int64_t size) {
        const torch::Tensor s = impl_->model->forward(t, l, d).contiguous();
        std::memcpy(scores.data() + begin, s.data_ptr<float>(), sizeof(float) * size_t(size));
      });
}

Status CostModel::predict_mc(const FeatureBatch& batch, int32_t samples, std::span<float> scores) const {
  if (samples < 1) return Status::invalid_argument("predict_mc: samples must be ≥ 1");
  if (static_cast<int64_t>(scores.size()) != samples * batch.count) {
    return Status::invalid_argument("predict_mc: scores: " + size_text(scores.size(), samples * batch.count));
  }
  return impl_->for_chunks(
      batch, [&](const torch::Tensor& t, const torch::Tensor& l, const torch::Tensor& d, int64_t begin, int64_t size) {
        for (int32_t k = 0; k < samples; ++k) {
          const torch::Tensor s = impl_->model->forward_mc(t, l, d).contiguous();
          std::memcpy(scores.data() + k * batch.count + begin, s.data_ptr<float>(), sizeof(float) * size_t(size));
        }
      });
}

Status CostModel::embed(const FeatureBatch& batch, std::span<float> embeddings) const {
  const int64_t d_model = config().d_model;
  if (static_cast<int64_t>(embeddings.size()) != batch.count * d_model) {
    return Status::invalid_argument("embed: embeddings: " + size_text(embeddings.size(), batch.count * d_model));
  }
  return impl_->for_chunks(
      batch, [&](const torch::Tensor& t, const torch::Tensor& l, const torch::Tensor& d, int64_t begin, int64_t size) {
        const torch::Tensor e = impl_->model->embed(t, l, d).contiguous();
        std::memcpy(embeddings.data() + begin * d_model, e.data_ptr<float>(), sizeof(float) * size_t(size * d_model));
      });
}

Result<std::string> interpolate_checkpoints(std::string_view a, std::string_view b, double alpha) {
  if (!std::isfinite(alpha)) return Status::invalid_argument("interpolate: alpha must be finite");
  try {
    auto la = CostModel::load(a);
    if (!la) return la.status().with_context("interpolate: a");
    auto lb = CostModel::load(b);
    if (!lb) return lb.status().with_context("interpolate: b");
    const std::shared_ptr<ScoreModel> ma = (*la)->score_model(), mb = (*lb)->score_model();
    if (!same_layout(ma->config(), mb->config())) {
      return Status::invalid_argument("interpolate: the two checkpoints have different configs");
    }
    if (Status s = mix_weights(*ma, *mb, alpha); !s) return s.with_context("interpolate");
    return save_score_model(*ma);
  } catch (const std::exception& e) {
    return Status::internal(std::string("interpolate: ") + e.what());
  }
}

Result<std::string> attach_adapter(std::string_view checkpoint, std::string_view platform, std::string_view adapter) {
  if (platform.empty()) return Status::invalid_argument("attach_adapter: no platform named");
  try {
    Result<std::shared_ptr<ScoreModel>> trunk = load_trunk(checkpoint);
    if (!trunk) return trunk.status().with_context("attach_adapter");
    Result<CheckpointAdapters> adapters = load_checkpoint_adapters(checkpoint);
    if (!adapters) return adapters.status().with_context("attach_adapter");
    Result<CheckpointPinned> pinned = load_checkpoint_pinned(checkpoint);
    if (!pinned) return pinned.status().with_context("attach_adapter");
    // Kept only when it applies to this trunk: a version never holds one that does not load.
    if (Result<std::shared_ptr<ScoreModel>> applied = apply_adapter(**trunk, adapter); !applied)
      return applied.status().with_context("attach_adapter");
    (*adapters)[std::string(platform)] = std::string(adapter);
    if (auto it = pinned->find(platform); it != pinned->end()) pinned->erase(it);  // the adapter serves it now
    return save_score_model(**trunk, *adapters, *pinned);
  } catch (const std::exception& e) {
    return Status::internal(std::string("attach_adapter: ") + e.what());
  }
}

Result<std::string> pin_platform(std::string_view checkpoint, std::string_view platform, std::string_view model) {
  if (platform.empty()) return Status::invalid_argument("pin_platform: no platform named");
  try {
    Result<std::shared_ptr<ScoreModel>> trunk = load_trunk(checkpoint);
    if (!trunk) return trunk.status().with_context("pin_platform");
    Result<CheckpointAdapters> adapters = load_checkpoint_adapters(checkpoint);
    if (!adapters) return adapters.status().with_context("pin_platform");
    Result<CheckpointPinned> pinned = load_checkpoint_pinned(checkpoint);
    if (!pinned) return pinned.status().with_context("pin_platform");
    // Kept only when it loads as a plain model that reads the trunk's inputs.
    Result<std::shared_ptr<ScoreModel>> own = load_score_model(model);
    if (!own) return own.status().with_context("pin_platform: the pinned model");
    const ModelConfig &t = (*trunk)->config(), &o = (*own)->config();
    if (t.token_dim != o.token_dim || t.descriptor_dim != o.descriptor_dim) {
      return Status::invalid_argument("pin_platform: the pinned model reads other inputs than the trunk");
    }
    (*pinned)[std::string(platform)] = std::string(model);
    if (auto it = adapters->find(platform); it != adapters->end()) adapters->erase(it);  // the pinned model serves it
    return save_score_model(**trunk, *adapters, *pinned);
  } catch (const std::exception& e) {
    return Status::internal(std::string("pin_platform: ") + e.what());
  }
}

Result<std::vector<std::string>> pinned_platforms(std::string_view checkpoint) {
  try {
    Result<CheckpointPinned> pinned = load_checkpoint_pinned(checkpoint);
    if (!pinned) return pinned.status();
    std::vector<std::string> out;
    for (const auto& entry : *pinned) out.push_back(entry.first);
    return out;
  } catch (const std::exception& e) {
    return Status::data_loss(std::string("pinned_platforms: ") + e.what());
  }
}

Result<std::vector<std::string>> own_model_platforms(std::string_view checkpoint) {
  Result<std::vector<std::string>> adapted = adapter_platforms(checkpoint);
  if (!adapted) return adapted;
  Result<std::vector<std::string>> pinned = pinned_platforms(checkpoint);
  if (!pinned) return pinned;
  std::vector<std::string> out;
  std::set_union(adapted->begin(), adapted->end(), pinned->begin(), pinned->end(), std::back_inserter(out));
  return out;
}

Result<std::vector<std::string>> adapter_platforms(std::string_view checkpoint) {
  try {
    Result<CheckpointAdapters> adapters = load_checkpoint_adapters(checkpoint);
    if (!adapters) return adapters.status();
    std::vector<std::string> out;
    for (const auto& entry : *adapters) out.push_back(entry.first);
    return out;
  } catch (const std::exception& e) {
    return Status::data_loss(std::string("adapter_platforms: ") + e.what());
  }
}

Result<std::string> platform_checkpoint(std::string_view checkpoint, std::string_view platform) {
  Result<std::vector<std::string>> own = own_model_platforms(checkpoint);
  if (!own) return own.status();
  if (own->empty()) return std::string(checkpoint);  // format 1: every platform's model already
  if (!platform.empty() && std::binary_search(own->begin(), own->end(), platform)) {
    Result<CheckpointPinned> pinned = load_checkpoint_pinned(checkpoint);
    if (!pinned) return pinned.status();
    if (auto it = pinned->find(platform); it != pinned->end()) return it->second;  // as pinned, bit for bit
  }
  auto model = CostModel::load_for_platform(checkpoint, platform);
  if (!model) return model.status();
  return (*model)->save();
}

}  // namespace tcl::trainer
