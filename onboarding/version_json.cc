#include "onboarding/version_json.h"

#include <boost/json.hpp>

#include <utility>

namespace tcl::onboarding {
namespace json = boost::json;

json::object metrics_json(const trainer::RankingMetrics& m) {
  return json::object{{"top1", m.top1.mean_ratio},
                      {"top1_sum_ratio", m.top1.sum_ratio},
                      {"top5", m.top5.mean_ratio},
                      {"top5_sum_ratio", m.top5.sum_ratio},
                      {"random_top1", m.random_top1.mean_ratio},
                      {"random_top5", m.random_top5.mean_ratio},
                      {"pairwise_accuracy", m.pairwise_accuracy},
                      {"tuning_proxy", m.tuning.geomean_ratio},
                      {"random_tuning_proxy", m.random_tuning.geomean_ratio},
                      {"eval_tasks", m.tasks},
                      {"eval_programs", m.programs}};
}

json::object versus_json(const PlatformComparison& c) {
  if (!c.teacher || !c.student) return json::object{{"tasks", c.tasks}};
  const ModelSummary &t = *c.teacher, &s = *c.student;
  const auto optional = [](const std::optional<double>& v) { return v ? json::value(*v) : json::value(nullptr); };
  return json::object{{"tasks", c.tasks},
                      {"judged_on", c.judged_on},
                      {"parent_top1", t.top1_mean},
                      {"top1", s.top1_mean},
                      {"change", s.top1_mean - t.top1_mean},
                      {"change_se", c.top1_mean_se},
                      {"parent_top1_sum_ratio", t.top1_sum},
                      {"top1_sum_ratio", s.top1_sum},
                      {"sum_change", s.top1_sum - t.top1_sum},
                      {"sum_change_se", c.top1_sum_se},
                      {"parent_tuning_proxy", optional(t.tuning)},
                      {"tuning_proxy", optional(s.tuning)},
                      {"tuning_tasks", c.tuning_tasks},
                      {"tuning_log_change_se", c.tuning_log_se}};
}

namespace {

json::value distill_config_json(registry::JobKind kind, const JobOptions& o, const trainer::TrainResult& trained,
                                const DistillConfig* student) {
  if (kind == registry::JobKind::kDistill && o.method == JobOptions::DistillMethod::kAdapter) {
    return json::object{{"method", distill_method_name(o.method)},
                        {"adapter_rank", o.adapter_rank},
                        {"adapter_layers", trainer::adapter_layers_name(o.adapter_layers)},
                        {"adapter_parameters", trained.adapter_parameters},
                        {"margin", o.margin}};
  }
  if (student == nullptr) return nullptr;
  const trainer::DistillTargets& t = *student->targets;
  json::object config{{"method", distill_method_name(o.method)},
                      {"label_weight", t.label_weight},
                      {"column_weight", o.column_weight},  // per old platform, as asked
                      {"column_term_weight", t.column_weight},
                      {"old_weight", t.old_weight},
                      {"ewc_weight", t.ewc_weight},
                      {"temperature", t.temperature},
                      {"unlabeled_ratio", t.unlabeled_ratio},
                      {"unlabeled_read", student->unlabeled_read},
                      {"unlabeled_programs", trained.unlabeled_programs},
                      {"old_bank_ratio", t.old_bank_ratio},
                      {"old_bank_read", student->old_bank_read},
                      {"old_bank_programs", trained.old_bank_programs},
                      {"ewc", student->ewc},
                      {"old_platforms", t.old_descriptors.size()},
                      {"margin", o.margin}};
  if (kind == registry::JobKind::kDistill && o.method == JobOptions::DistillMethod::kBestOf) {
    config["choice"] = choice_name(o.choice);
  }
  return config;
}

}  // namespace

std::string config_json(registry::JobKind kind, const JobOptions& o, const trainer::TrainResult& trained,
                        std::optional<std::int64_t> init, const DistillConfig* student) {
  return json::serialize(json::object{{"kind", kind == registry::JobKind::kDistill ? "distill" : "train"},
                                      {"model", o.model},
                                      {"model_config", trainer::config_to_text(trained.config)},
                                      {"epochs", o.epochs},
                                      {"learning_rate", o.learning_rate},
                                      {"min_steps", o.min_steps},
                                      {"validation_fraction", o.validation_fraction},
                                      {"validation_by", o.validation_by_tasks ? "tasks" : "programs"},
                                      {"patience", o.patience},
                                      {"refit", o.refit},
                                      {"auto_schedule", o.auto_schedule},
                                      {"max_records", o.max_records},
                                      {"eval_fraction", o.eval_fraction},
                                      {"seed", o.seed},
                                      {"init", init ? json::value(*init) : json::value(nullptr)},
                                      {"distill", distill_config_json(kind, o, trained, student)}});
}

std::string training_summary_json(std::int64_t job, const trainer::TrainResult& trained, bool fine_tune_scheduled,
                                  std::chrono::steady_clock::time_point started) {
  json::array losses;
  for (double l : trained.epoch_losses) losses.push_back(l);
  return json::serialize(json::object{
      {"job", job},
      {"records_read", static_cast<std::int64_t>(trained.data.records)},
      {"epochs_planned", trained.epochs_planned},
      {"epochs_done", trained.epochs_done},
      {"best_epoch", trained.best_epoch},
      {"refitted", trained.refitted},
      {"validation_top1",
       trained.best_epoch > 0 ? json::value(trained.validation.top1.mean_ratio) : json::value(nullptr)},
      {"schedule", !fine_tune_scheduled
                       ? json::value(nullptr)
                       : json::value(json::object{{"long", trained.long_schedule_used},
                                                  {"zero_shot_pairwise", trained.zero_shot.pairwise_accuracy},
                                                  {"zero_shot_top1", trained.zero_shot.top1.mean_ratio}})},
      {"steps", trained.steps},
      {"epoch_losses", std::move(losses)},
      {"budget_exhausted", trained.budget_exhausted},
      {"parameters", trained.num_parameters},
      {"wall_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()}});
}

}  // namespace tcl::onboarding
