#include "trainer/pool_embedding.h"

#include <algorithm>
#include <cmath>

namespace tcl::trainer {

PoolEmbedder::PoolEmbedder(ServedModel model, std::span<const float> descriptor, std::vector<std::vector<float>> others,
                           PoolEmbeddingOptions options, ServedModel reference)
    : model_(model), reference_(reference), descriptor_(descriptor.begin(), descriptor.end()),
      others_(std::move(others)), options_(options) {}

int64_t PoolEmbedder::dim() const { return model_.model->config().d_model; }

Status PoolEmbedder::add(std::span<const core::Step> steps, bool with_uncertainty) {
  if (!pending_.empty() && with_uncertainty != pending_uncertainty_) {
    return Status::invalid_argument("pool embedding: flush() between programs with and without uncertainty");
  }
  pending_uncertainty_ = with_uncertainty;
  pending_.emplace_back(steps.begin(), steps.end());
  if (pending_.size() == kPass) return flush();
  return Status::ok();
}

void PoolEmbedder::take(std::vector<float>* embeddings, std::vector<float>* uncertainty,
                        std::vector<float>* predicted) {
  *embeddings = std::move(embeddings_);
  *uncertainty = std::move(uncertainty_);
  if (predicted != nullptr) *predicted = std::move(predicted_);
  embeddings_.clear();
  uncertainty_.clear();
  predicted_.clear();
}

Status PoolEmbedder::score(const ServedModel& m, const FeatureBatch& batch, std::span<float> out) const {
  return m.fast ? m.fast->predict(batch, out) : m.model->predict(batch, out);
}

Status PoolEmbedder::flush() {
  const auto n = static_cast<int64_t>(pending_.size());
  if (n == 0) return Status::ok();
  if (options_.mc_samples < 2) return Status::invalid_argument("pool embedding: mc_samples must be >= 2");
  const ModelConfig& c = model_.model->config();
  int L = 1;
  for (const auto& s : pending_) L = std::max<int>(L, static_cast<int>(std::min<int64_t>(s.size(), c.max_len)));
  const std::size_t stride = static_cast<std::size_t>(L) * core::kTokenDim;
  tokens_.assign(static_cast<std::size_t>(n) * stride, 0.0f);
  lengths_.resize(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) lengths_[i] = core::encode_tokens(pending_[i], L, tokens_.data() + i * stride);
  pending_.clear();
  FeatureBatch batch{n, L, tokens_, lengths_, descriptor_};

  const std::size_t first = embeddings_.size();
  embeddings_.resize(first + static_cast<std::size_t>(n * dim()));
  std::span<float> emb(embeddings_.data() + first, static_cast<std::size_t>(n * dim()));
  Status s = model_.fast ? model_.fast->embed(batch, emb) : model_.model->embed(batch, emb);
  if (!s || !pending_uncertainty_) return s;

  const int S = options_.mc_samples;
  mc_.resize(static_cast<std::size_t>(n * S));
  s = model_.fast ? model_.fast->head_mc(emb, n, S, options_.seed + passes_++, mc_)
                  : model_.model->predict_mc(batch, S, mc_);
  if (!s) return s;
  std::vector<double> u(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double m1 = 0, m2 = 0;
    for (int k = 0; k < S; ++k) {
      const double v = mc_[static_cast<std::size_t>(k * n + i)];
      m1 += v;
      m2 += v * v;
    }
    m1 /= S;
    u[i] = std::sqrt(std::max(0.0, m2 / S - m1 * m1));
  }
  // The plain score (no dropout): the prediction kept for the "fast" rule, and
  // the centre of the spread over other platforms and of the reference's distance.
  std::vector<float> own(static_cast<std::size_t>(n));
  if (s = score(model_, batch, own); !s) return s;
  predicted_.insert(predicted_.end(), own.begin(), own.end());
  if (!others_.empty()) {
    std::vector<double> m1(own.begin(), own.end()), m2(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) m2[i] = double(own[i]) * own[i];
    std::vector<float> other(static_cast<std::size_t>(n));
    for (const auto& d : others_) {
      batch.descriptors = d;
      if (s = score(model_, batch, other); !s) return s;
      for (int64_t i = 0; i < n; ++i) {
        m1[i] += other[i];
        m2[i] += double(other[i]) * other[i];
      }
    }
    batch.descriptors = descriptor_;
    const double k = static_cast<double>(others_.size() + 1);
    for (int64_t i = 0; i < n; ++i) u[i] += std::sqrt(std::max(0.0, m2[i] / k - (m1[i] / k) * (m1[i] / k)));
  }
  if (reference_.model != nullptr) {
    std::vector<float> ref(static_cast<std::size_t>(n));
    if (s = score(reference_, batch, ref); !s) return s;
    for (int64_t i = 0; i < n; ++i) u[i] += std::fabs(double(own[i]) - ref[i]);
  }
  for (double x : u) uncertainty_.push_back(static_cast<float>(x));
  return Status::ok();
}

}  // namespace tcl::trainer
