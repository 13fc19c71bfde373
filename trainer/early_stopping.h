// trainer/early_stopping.h — keeps the weights of the best epoch by
// validation top-1 and says when patience has run out (Optimisation::
// patience in train_job.h; internal to trainer/: torch).
//
// After each finished epoch, observe() with its validation metrics: an epoch
// is the new best when it is the first or its top-1 mean ratio beats the
// best so far (ties go to the earlier epoch); its parameters and buffers are
// then copied. observe() returns true (stop) when `patience` > 0 and that
// many epochs have passed since the best without beating it.
//
// Thread-safety: needs exclusive use of the model during observe/restore.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "trainer/evaluation.h"
#include "trainer/score_model.h"

namespace tcl::trainer {

class EarlyStopping {
 public:
  explicit EarlyStopping(int patience) : patience_(patience) {}

  // `epoch` is 1-based and increasing; true = stop training.
  bool observe(int epoch, const RankingMetrics& validation, ScoreModel& model);

  int best_epoch() const { return best_epoch_; }  // 0 = none observed
  const RankingMetrics& best() const { return best_; }
  // Writes the best epoch's weights back into the model (no-op when none observed).
  void restore_best(ScoreModel& model) const;

 private:
  int patience_;
  int best_epoch_ = 0;
  RankingMetrics best_;
  std::vector<torch::Tensor> weights_;  // parameters, then buffers
};

}  // namespace tcl::trainer
