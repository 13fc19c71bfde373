#include "onboarding/distill.h"

#include <algorithm>
#include <utility>

namespace tcl::onboarding {

std::vector<std::string> old_platforms(const std::vector<std::string>& teacher_platforms, const std::string& platform) {
  std::vector<std::string> out;
  for (const auto& name : teacher_platforms) {
    if (name != platform) out.push_back(name);
  }
  return out;
}

std::vector<std::string> covered_platforms(std::vector<std::string> teacher_platforms, const std::string& platform) {
  if (std::find(teacher_platforms.begin(), teacher_platforms.end(), platform) == teacher_platforms.end()) {
    teacher_platforms.push_back(platform);
  }
  return teacher_platforms;
}

bool wants_unlabeled(const trainer::DistillTargets& weights) {
  return weights.unlabeled_ratio > 0 && weights.max_unlabeled > 0;
}

trainer::DistillTargets plan_distillation(const trainer::DistillTargets& weights, DistillSources sources) {
  trainer::DistillTargets t;
  t.old_descriptors = std::move(sources.old_descriptors);
  t.teacher_fisher = sources.teacher_fisher;
  t.column_checkpoint = sources.column_checkpoint;
  t.label_weight = weights.label_weight;
  t.column_weight = weights.column_weight;
  t.old_weight = weights.old_weight;
  t.ewc_weight = weights.ewc_weight;
  t.temperature = weights.temperature;
  t.unlabeled_ratio = weights.unlabeled_ratio;
  t.max_unlabeled = weights.max_unlabeled;
  if (wants_unlabeled(weights)) t.unlabeled = sources.unlabeled;
  return t;
}

trainer::TrainRequest column_request(trainer::TrainRequest request, const trainer::FineTune& teacher, int epochs) {
  request.start = teacher;
  request.optimisation.epochs = epochs;
  request.fisher.compute = false;
  request.resources.eval_each_epoch = false;
  return request;
}

Result<SplitScores> evaluate_on_split(std::string_view student, std::string_view teacher,
                                      std::span<const core::Record> records, const trainer::Platform& platform,
                                      int threads) {
  const trainer::DatasetOptions split = trainer::TrainRequest::default_data_options();
  auto s = trainer::evaluate_checkpoint(student, records, platform, split, threads);
  if (!s) return s.status();
  auto t = trainer::evaluate_checkpoint(teacher, records, platform, split, threads);
  if (!t) return t.status();
  return SplitScores{*s, *t};
}

PlatformComparison comparison_of(const std::string& platform, bool is_new, const SplitScores* scores) {
  PlatformComparison c{platform, is_new, std::nullopt, std::nullopt};
  if (scores) {
    c.teacher_top1 = scores->teacher.top1.mean_ratio;
    c.student_top1 = scores->student.top1.mean_ratio;
  }
  return c;
}

}  // namespace tcl::onboarding
