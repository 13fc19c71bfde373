// trainer/early_stopping.cc — best-epoch bookkeeping and weight copies.
#include "trainer/early_stopping.h"

namespace tcl::trainer {

bool EarlyStopping::observe(int epoch, const RankingMetrics& validation, ScoreModel& model) {
  if (best_epoch_ == 0 || validation.top1.mean_ratio > best_.top1.mean_ratio) {
    best_epoch_ = epoch;
    best_ = validation;
    torch::NoGradGuard no_grad;
    weights_.clear();
    for (const torch::Tensor& p : model.parameters()) weights_.push_back(p.detach().clone());
    for (const torch::Tensor& b : model.buffers()) weights_.push_back(b.detach().clone());
    return false;
  }
  return patience_ > 0 && epoch - best_epoch_ >= patience_;
}

void EarlyStopping::restore_best(ScoreModel& model) const {
  if (weights_.empty()) return;
  torch::NoGradGuard no_grad;
  std::size_t i = 0;
  for (torch::Tensor& p : model.parameters()) p.copy_(weights_[i++]);
  for (torch::Tensor& b : model.buffers()) b.copy_(weights_[i++]);
}

}  // namespace tcl::trainer
