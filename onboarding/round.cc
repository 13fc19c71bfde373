#include "onboarding/round.h"

#include <cmath>
#include <unordered_map>
#include <utility>

namespace tcl::onboarding {

RoundPool::RoundPool(const RoundModels& models, trainer::PoolEmbeddingOptions embedding) {
  if (models.student.model == nullptr) return;  // random, uniform: no embedding needed
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
  embedder_->take(&embeddings_, &uncertainty_, &predicted_);
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
  pool.predicted = p.predicted_;
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

namespace {

bool cancelled(const std::atomic<bool>* cancel) { return cancel != nullptr && cancel->load(std::memory_order_relaxed); }

Status stopped() { return Status::cancelled("the round was cancelled before it was computed"); }

// The pool: every unmeasured, not pending candidate, then the measured
// programs of the pool's tasks.
Status read_pool(RoundSource& source, const std::atomic<bool>* cancel, RoundPool* pool, Round* round) {
  std::unordered_set<std::string> measured;
  std::vector<std::pair<std::string, std::vector<core::Step>>> measured_programs;
  Status read = source.measured([&](const std::string& program_id, SourceRecord& r) {
    if (cancelled(cancel)) return false;
    if (!measured.insert(program_id).second) return true;
    if (pool->embedded()) {
      if (const core::Record* record = r.get()) measured_programs.emplace_back(record->workload_key, record->steps);
    }
    return true;
  });
  if (!read) return read;
  if (cancelled(cancel)) return stopped();
  auto pending = source.pending();
  if (!pending) return pending.status();

  round->measured = measured.size();
  std::unordered_map<std::string, std::int32_t> task_index;
  Status failure;
  read = source.candidates([&](const std::string& program_id, SourceRecord& r) {
    if (cancelled(cancel)) return false;  // embedding is the long part: stop between records
    if (measured.count(program_id) || pending->count(program_id)) return true;
    const core::Record* record = r.get();
    if (record == nullptr) return true;
    auto [it, added] = task_index.try_emplace(record->workload_key, static_cast<std::int32_t>(round->task_keys.size()));
    if (added) round->task_keys.push_back(record->workload_key);
    round->program_ids.push_back(program_id);
    failure = pool->add_candidate(it->second, record->steps);
    return failure.is_ok();
  });
  if (!read) return read;
  if (!failure) return failure;
  if (cancelled(cancel)) return stopped();
  for (const auto& [key, steps] : measured_programs) {
    auto it = task_index.find(key);
    if (it == task_index.end()) continue;
    if (Status s = pool->add_measured(it->second, steps); !s) return s;
  }
  return pool->finish(static_cast<std::int32_t>(round->task_keys.size()));
}

}  // namespace

Status run_round(RoundSource& source, const RoundModels& models, const RoundRequest& request, Round* round) {
  RoundPool pool(models, request.embedding);
  if (Status s = read_pool(source, request.options.cancel, &pool, round); !s) return s;
  const std::optional<std::int64_t> budget = request.budget(pool.size());
  if (!budget) return Status::ok();
  round->budget = *budget;
  round->embedded_at = std::chrono::steady_clock::now();
  auto picks = select_round(pool, *budget, request.options);
  if (!picks) return picks.status();
  round->picks = std::move(*picks);
  round->selected_at = std::chrono::steady_clock::now();
  return Status::ok();
}

}  // namespace tcl::onboarding
