#include "onboarding/distill.h"

#include <algorithm>
#include <utility>

#include "core/features.h"
#include "core/program_id.h"
#include "core/task_split.h"
#include "trainer/cost_model.h"

namespace tcl::onboarding {

Status start_adapter_distill(std::string_view production, trainer::FineTune tune, std::string* trunk,
                             trainer::TrainRequest* request) {
  auto own = trainer::platform_checkpoint(production, "");
  if (!own) return own.status();
  *trunk = std::move(*own);
  auto model = trainer::CostModel::load(*trunk);
  if (!model) return model.status();
  if (const trainer::ModelKind kind = (*model)->config().kind; kind != trainer::ModelKind::kMamba) {
    return Status::failed_precondition("it is a model of kind " + std::string(trainer::model_kind_name(kind)) +
                                       ", not a Mamba student: an adapter adapts a Mamba student's dense layers; "
                                       "distill with \"method\": \"student\"");
  }
  tune.init_checkpoint = *trunk;
  request->start = tune;
  request->fisher.compute = false;
  return Status::ok();
}

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

double column_term_weight(double per_old_platform, std::size_t old_platforms) {
  return per_old_platform * static_cast<double>(std::max<std::size_t>(old_platforms, 1));
}

bool wants_unlabeled(const trainer::DistillTargets& weights) {
  return weights.unlabeled_ratio > 0 && weights.max_unlabeled > 0;
}

bool wants_old_bank(const trainer::DistillTargets& weights, std::size_t old_platforms) {
  return old_platforms > 0 && weights.old_weight > 0 && weights.old_bank_ratio > 0 && weights.max_old_bank > 0;
}

trainer::DistillTargets plan_distillation(const trainer::DistillTargets& weights, DistillSources sources) {
  trainer::DistillTargets t;
  t.old_descriptors = std::move(sources.old_descriptors);
  t.teacher_fisher = sources.teacher_fisher;
  t.column_checkpoint = sources.column_checkpoint;
  t.label_weight = weights.label_weight;
  t.column_weight = column_term_weight(weights.column_weight, t.old_descriptors.size());
  t.old_weight = weights.old_weight;
  t.ewc_weight = weights.ewc_weight;
  t.temperature = weights.temperature;
  t.unlabeled_ratio = weights.unlabeled_ratio;
  t.max_unlabeled = weights.max_unlabeled;
  if (wants_unlabeled(weights)) t.unlabeled = sources.unlabeled;
  t.old_bank_ratio = weights.old_bank_ratio;
  t.max_old_bank = weights.max_old_bank;
  if (wants_old_bank(weights, t.old_descriptors.size())) t.old_bank = sources.old_bank;
  return t;
}

trainer::TrainRequest column_request(trainer::TrainRequest request, const trainer::FineTune& teacher, int epochs) {
  request.start = teacher;
  request.optimisation.epochs = epochs;
  // Fine-tuning's rate, whatever the student's (trainer::kDistillStudentLearningRate).
  request.optimisation.learning_rate = trainer::Optimisation{}.learning_rate;
  request.fisher.compute = false;
  request.resources.eval_each_epoch = false;
  return request;
}

Result<PairedScores> evaluate_against_teacher(std::string_view student, std::string_view teacher,
                                              std::span<const core::Record> records, const trainer::Platform& platform,
                                              int threads) {
  const std::string_view checkpoints[] = {student, teacher};
  auto scored = trainer::score_checkpoints(checkpoints, records, platform, threads);
  if (!scored) return scored.status();
  const std::vector<float>&s = scored->scores[0], &t = scored->scores[1];
  PairedScores out;
  out.student = trainer::evaluate_ranking(scored->groups, scored->latencies, s);
  out.teacher = trainer::evaluate_ranking(scored->groups, scored->latencies, t);
  const auto by_student = trainer::per_task_in_sets(scored->groups, scored->latencies, s);
  const auto by_teacher = trainer::per_task_in_sets(scored->groups, scored->latencies, t);
  const auto values = [](const trainer::TaskInSets& v) {
    return TaskValues{v.top1, v.best, v.best_top1, v.tuning_ratio};
  };
  for (std::size_t i = 0; i < by_student.size(); ++i) {  // the same sets, in the same order
    out.tasks.push_back(TaskPair{values(by_teacher[i]), values(by_student[i])});
    out.task_keys.push_back(scored->task_keys[static_cast<std::size_t>(by_student[i].group)]);
  }
  return out;
}

std::string judged_on(bool is_new) {
  return std::string(is_new ? "its standing split" : "every measured task") + ", at most " +
         std::to_string(kJudgedProgramsPerTask) + " programs each, top-1 averaged over sets of " +
         std::to_string(kProgramsPerSet);
}

namespace {
// JudgedRecords' heaps: the highest program id on top, the first to go.
constexpr auto kHigherIdFirst = [](const auto& a, const auto& b) { return a.id < b.id; };
}  // namespace

JudgedRecords::JudgedRecords(bool standing_split_only, std::int64_t per_task)
    : standing_split_only_(standing_split_only), per_task_(per_task) {}

void JudgedRecords::add(std::string_view program_id, const core::Record& record) {
  if (per_task_ <= 0 || core::classify(record) != core::RecordClass::kMeasured) return;
  std::string key = core::canonical_workload_key(record.workload_key);
  const double eval_fraction = trainer::TrainRequest::default_data_options().eval_fraction;
  if (standing_split_only_ && !core::in_holdout(key, eval_fraction, 0)) return;
  std::vector<Kept>& heap = tasks_[std::move(key)];
  if (static_cast<std::int64_t>(heap.size()) >= per_task_) {
    if (program_id >= heap.front().id) return;
    std::pop_heap(heap.begin(), heap.end(), kHigherIdFirst);
    heap.pop_back();
  }
  heap.push_back(Kept{std::string(program_id), record});
  std::push_heap(heap.begin(), heap.end(), kHigherIdFirst);
}

std::vector<core::Record> JudgedRecords::take() {
  std::vector<core::Record> out;
  for (auto& [key, heap] : tasks_) {
    std::sort_heap(heap.begin(), heap.end(), kHigherIdFirst);  // ascending id
    for (Kept& k : heap) out.push_back(std::move(k.record));
  }
  tasks_.clear();
  return out;
}

Result<trainer::RankingMetrics> evaluate_standing_split(std::string_view checkpoint,
                                                        std::span<const core::Record> records,
                                                        const trainer::Platform& platform, int threads) {
  const double eval_fraction = trainer::TrainRequest::default_data_options().eval_fraction;
  std::vector<core::Record> standing;
  for (const core::Record& r : records) {
    if (core::in_holdout(core::canonical_workload_key(r.workload_key), eval_fraction, 0)) standing.push_back(r);
  }
  if (standing.empty()) return Status::failed_precondition("no measured program of the standing split");
  const std::string_view checkpoints[] = {checkpoint};
  auto scored = trainer::score_checkpoints(checkpoints, standing, platform, threads);
  if (!scored) return scored.status();
  return trainer::evaluate_ranking(scored->groups, scored->latencies, scored->scores[0]);
}

std::vector<TaskPair> standing_split_tasks(const PairedScores& scores, double eval_fraction) {
  std::vector<TaskPair> out;
  for (std::size_t i = 0; i < scores.tasks.size(); ++i) {
    if (core::in_holdout(scores.task_keys[i], eval_fraction, 0)) out.push_back(scores.tasks[i]);
  }
  return out;
}

PlatformComparison comparison_of(const std::string& platform, bool is_new, std::string judged_on,
                                 const PairedScores* scores) {
  return paired_comparison(platform, is_new, std::move(judged_on),
                           scores ? std::span<const TaskPair>(scores->tasks) : std::span<const TaskPair>());
}

}  // namespace tcl::onboarding
