#include "onboarding/round.h"

#include <cmath>

namespace tcl::onboarding {

RoundPool::RoundPool(const RoundModels& models, trainer::PoolEmbeddingOptions embedding) {
  if (models.student.model == nullptr) return;  // random: no embedding needed
  const bool column = models.column.model != nullptr;
  embedder_.emplace(column ? models.column : models.student, models.descriptor, models.others, embedding,
                    column ? models.student : trainer::ServedModel{});
  dim_ = embedder_->dim();
}

Status RoundPool::add_candidate(std::int32_t task, std::span<const core::Step> steps) {
  if (candidates_done_) return Status::internal("RoundPool: a candidate after the measured programs");
  task_.push_back(task);
  return embedder_ ? embedder_->add(steps, true) : Status::ok();
}

Status RoundPool::end_candidates() {
  if (candidates_done_) return Status::ok();
  candidates_done_ = true;
  if (!embedder_) {
    embeddings_.assign(task_.size(), 0.0f);  // dim 1; random ignores it
    return Status::ok();
  }
  if (Status s = embedder_->flush(); !s) return s;
  embedder_->take(&embeddings_, &uncertainty_);
  return Status::ok();
}

Status RoundPool::add_measured(std::int32_t task, std::span<const core::Step> steps) {
  if (!embedder_) return Status::ok();  // random: Diversity plays no part
  if (Status s = end_candidates(); !s) return s;
  measured_task_.push_back(task);
  return embedder_->add(steps, false);
}

Status RoundPool::finish(std::int32_t num_tasks) {
  const bool had_measured = candidates_done_;
  if (Status s = end_candidates(); !s) return s;
  num_tasks_ = num_tasks;
  if (had_measured && embedder_) {
    if (Status s = embedder_->flush(); !s) return s;
    std::vector<float> unused;
    embedder_->take(&measured_embeddings_, &unused);
  }
  return Status::ok();
}

std::int64_t budget_of_fraction(double fraction, std::int64_t pool) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(fraction * static_cast<double>(pool) - 1e-9)));
}

Result<std::vector<sampler::Pick>> select_round(const RoundPool& p, std::int64_t budget, const RoundOptions& options) {
  sampler::Pool pool;
  pool.count = p.size();
  pool.dim = p.dim_;
  pool.embeddings = p.embeddings_;
  pool.uncertainty = p.uncertainty_;
  pool.task = p.task_;
  pool.num_tasks = p.num_tasks_;
  pool.measured_count = static_cast<std::int64_t>(p.measured_task_.size());
  pool.measured_embeddings = p.measured_embeddings_;
  pool.measured_task = p.measured_task_;
  sampler::SampleOptions so;
  so.budget = budget;
  so.strategy = options.strategy;
  so.weights = options.weights;
  so.seed = options.seed;
  so.min_per_task = options.min_per_task;
  so.random_share = options.random_share;
  so.cancel = options.cancel;
  return sampler::select(pool, so);
}

}  // namespace tcl::onboarding
