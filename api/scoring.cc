#include "api/scoring.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

namespace tcl::api {

Status score_batch(const LoadedModel& model, const trainer::FeatureBatch& batch, std::span<float> scores) {
  if (batch.count == 0 && scores.empty()) return Status::ok();
  return model.fast ? model.fast->predict(batch, scores) : model.model->predict(batch, scores);
}

Status check_scores(const LoadedModel& model, std::span<const float> scores) {
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (!std::isfinite(scores[i])) {
      return Status::internal("model version " + std::to_string(model.version) +
                              " gave a non-finite score for program " + std::to_string(i));
    }
  }
  return Status::ok();
}

bool platform_covered(const LoadedModel& model, std::string_view platform) {
  return std::find(model.platforms.begin(), model.platforms.end(), platform) != model.platforms.end();
}

}  // namespace tcl::api
