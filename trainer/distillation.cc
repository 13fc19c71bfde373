// trainer/distillation.cc — distillation targets, the pool, EWC's inputs.
#include "trainer/distillation.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>

#include "core/program_id.h"
#include "trainer/cost_model.h"
#include "trainer/fast_inference.h"
#include "trainer/fisher.h"
#include "trainer/model_config.h"

namespace tcl::trainer {
namespace {

// Scores of every program of a split by a frozen model under one
// descriptor: the fast path for a student.
Result<std::vector<float>> frozen_scores(const CostModel& model, const DatasetSplit& split, std::int64_t seq_len,
                                         std::span<const float> descriptor) {
  std::vector<float> out(static_cast<std::size_t>(split.count));
  if (split.count == 0) return out;
  const FeatureBatch batch{split.count, seq_len, split.tokens, split.lengths, descriptor};
  if (model.config().kind == ModelKind::kMamba) {
    auto fast = StudentInference::create(model, InferenceOptions{.threads = 0});
    if (!fast) return fast.status();
    if (Status s = (*fast)->predict(batch, out); !s) return s;
    return out;
  }
  if (Status s = model.predict(batch, out); !s) return s;
  return out;
}

Status check_targets(const Distill& d, const Dataset& ds) {
  const DistillTargets& kd = d.targets;
  if (d.teacher.init_checkpoint.empty())
    return Status::invalid_argument("train: distill needs the teacher's checkpoint");
  if (ds.encoding != TokenEncoding::kSteps) return Status::invalid_argument("train: distill needs the steps encoding");
  if (!(kd.unlabeled_ratio >= 0)) return Status::invalid_argument("train: unlabeled_ratio must be >= 0");
  if (kd.max_unlabeled < 0) return Status::invalid_argument("train: max_unlabeled must be >= 0");
  if (!(kd.old_bank_ratio >= 0)) return Status::invalid_argument("train: old_bank_ratio must be >= 0");
  if (kd.max_old_bank < 0) return Status::invalid_argument("train: max_old_bank must be >= 0");
  if (!(d.levers.feature_weight >= 0) || !std::isfinite(d.levers.feature_weight))
    return Status::invalid_argument("train: feature_weight must be finite and >= 0");
  if (!(d.levers.teacher_mix >= 0 && d.levers.teacher_mix <= 1))
    return Status::invalid_argument("train: teacher_mix must be in [0, 1]");
  const std::vector<double>& on_new = d.levers.old_weight_on_new_programs;
  if (!on_new.empty() && on_new.size() != kd.old_descriptors.size()) {
    return Status::invalid_argument("train: old_weight_on_new_programs has " + std::to_string(on_new.size()) +
                                    " factors for " + std::to_string(kd.old_descriptors.size()) + " old platforms");
  }
  for (double f : on_new) {
    if (!(f >= 0) || !std::isfinite(f))
      return Status::invalid_argument("train: old_weight_on_new_programs must be finite and >= 0");
  }
  if (!kd.old_teachers.empty() && kd.old_teachers.size() != kd.old_descriptors.size()) {
    return Status::invalid_argument("train: old_teachers has " + std::to_string(kd.old_teachers.size()) +
                                    " checkpoints for " + std::to_string(kd.old_descriptors.size()) + " old platforms");
  }
  return Status::ok();
}

// What the pool and the bank share: platform k's options (its eval split
// stays out) at the student's max_len, at most `max_records` programs
// sampled with the setup's seed.
DatasetOptions unlabeled_options(const DistillSetup& s, std::int64_t max_records) {
  DatasetOptions options = s.data->options;
  options.max_len = static_cast<int>(std::min<std::int64_t>(s.data->options.max_len, s.config->max_len));
  options.max_records = max_records;
  options.sample_seed = s.seed;
  return options;
}

// `records` as an unlabeled dataset; nullopt when no task has 2 programs.
Result<std::optional<Dataset>> unlabeled_or_none(std::span<const core::Record> records, const DistillSetup& s,
                                                 const DatasetOptions& options, const char* what) {
  auto built = build_unlabeled_dataset(records, s.data->platform, options);
  if (built) return std::optional<Dataset>(std::move(*built));
  if (built.status().code() == StatusCode::kFailedPrecondition) return std::optional<Dataset>();
  return built.status().with_context(std::string("train: ") + what);
}

// The unmeasured pool as a dataset (nullopt when no task has 2 programs).
Result<std::optional<Dataset>> build_pool(const DistillSetup& s) {
  const DistillTargets& kd = s.distill->targets;
  // Whole validation tasks stay out too: no gradient from the tasks that judge the epochs.
  std::vector<core::Record> outside_validation;
  std::span<const core::Record> pool = kd.unlabeled;
  const Dataset& ds = *s.dataset;
  if (ds.validation.count > 0 && s.data->options.validation_split == ValidationSplit::kTasks) {
    std::unordered_set<std::string> validation_tasks;
    for (std::int64_t g : ds.validation.groups) validation_tasks.insert(ds.task_keys[static_cast<std::size_t>(g)]);
    for (const core::Record& r : kd.unlabeled) {
      if (!validation_tasks.count(core::canonical_workload_key(r.workload_key))) outside_validation.push_back(r);
    }
    pool = outside_validation;
  }
  return unlabeled_or_none(pool, s, unlabeled_options(s, kd.max_unlabeled), "unlabeled programs");
}

// The old platforms' bank as a dataset (nullopt when no task has 2 programs):
// every task of it, none held out (they are not platform k's).
Result<std::optional<Dataset>> build_old_bank(const DistillSetup& s) {
  DatasetOptions options = unlabeled_options(s, s.distill->targets.max_old_bank);
  options.eval_fraction = 0;
  return unlabeled_or_none(s.distill->targets.old_bank, s, options, "old platforms' bank");
}

// A source of unlabeled programs: KD inputs at `ratio` batches per measured
// batch, at most all of its own.
BatchSource unlabeled_source(const Dataset& ds, const torch::Tensor& descriptor, std::int64_t measured_batches,
                             double ratio, const DistillSetup& s, bool old_bank) {
  BatchSource src{.ds = &ds,
                  .train = to_tensors(ds.train, ds, s.device),
                  .descriptor = descriptor,
                  .groups = group_rows(ds.train),
                  .labeled = false,
                  .old_bank = old_bank};
  src.max_batches = static_cast<std::int64_t>(std::ceil(ratio * static_cast<double>(measured_batches)));
  src.max_batches = std::min(src.max_batches, batches_per_epoch(src.groups, s.shape));
  return src;
}

// The model whose scores under h_j are old platform j's KD target: its own
// teacher (DistillTargets::old_teachers), loaded once per distinct
// checkpoint, else the teacher.
class OldTeachers {
 public:
  OldTeachers(const DistillTargets& kd, const CostModel& teacher) : kd_(kd), teacher_(teacher) {}
  Result<const CostModel*> of(std::size_t j) {
    if (j >= kd_.old_teachers.size() || kd_.old_teachers[j].empty()) return &teacher_;
    const std::string_view bytes = kd_.old_teachers[j];
    for (const auto& [seen, model] : loaded_) {
      if (seen == bytes) return model.get();
    }
    auto model = CostModel::load(bytes);
    if (!model) return model.status().with_context("train: old platform " + std::to_string(j) + "'s teacher");
    if ((*model)->config().token_dim != teacher_.config().token_dim ||
        (*model)->config().descriptor_dim != teacher_.config().descriptor_dim ||
        (*model)->config().max_len < teacher_.config().max_len) {
      return Status::invalid_argument("train: old platform " + std::to_string(j) +
                                      "'s teacher reads other inputs than the teacher");
    }
    loaded_.emplace_back(bytes, std::move(*model));
    return loaded_.back().second.get();
  }

 private:
  const DistillTargets& kd_;
  const CostModel& teacher_;
  std::vector<std::pair<std::string_view, std::unique_ptr<CostModel>>> loaded_;
};

// Every source's targets: the column's under h_k, each old platform's
// teacher's (the teacher's, or old_teachers') under each h_j.
Status fill_targets(const DistillSetup& s, const CostModel& teacher, const CostModel* column,
                    std::vector<BatchSource>* sources) {
  OldTeachers old_teachers(s.distill->targets, teacher);
  for (BatchSource& src : *sources) {
    const DatasetSplit& split = src.ds->train;
    if (column != nullptr && !src.old_bank) {
      auto c = frozen_scores(*column, split, src.ds->seq_len, s.dataset->descriptor);
      if (!c) return c.status().with_context("train: active column");
      src.column_target = std::move(*c);
    }
    const DistillTargets& kd = s.distill->targets;
    for (std::size_t j = 0; j < kd.old_descriptors.size(); ++j) {
      if (!(old_term_weight(kd, s.distill->levers, j, src.old_bank) >
            0)) {  // a term that weighs nothing here reads no target
        src.old_targets.emplace_back();
        continue;
      }
      auto own = old_teachers.of(j);
      if (!own) return own.status();
      auto t = frozen_scores(**own, split, src.ds->seq_len, kd.old_descriptors[j]);
      if (!t) return t.status().with_context("train: teacher");
      src.old_targets.push_back(std::move(*t));
    }
  }
  return Status::ok();
}

}  // namespace

Result<DistillTerms> prepare_distillation(const DistillSetup& s, ScoreModel& model, std::vector<BatchSource>* sources,
                                          DistillInputs* inputs) {
  if (Status st = check_targets(*s.distill, *s.dataset); !st) return st;
  const DistillTargets& kd = s.distill->targets;
  auto teacher = CostModel::load(s.distill->teacher.init_checkpoint);
  if (!teacher) return teacher.status().with_context("train: teacher");
  std::unique_ptr<CostModel> column;
  if (!kd.column_checkpoint.empty()) {
    auto c = CostModel::load(kd.column_checkpoint);
    if (!c) return c.status().with_context("train: active column");
    column = std::move(*c);
  }
  if (s.distill->levers.student_from_column && !same_layout((*teacher)->config(), column->config())) {
    // The student has the column's weights and EWC the teacher's: one layout.
    return Status::invalid_argument(
        "train: student_from_column needs a column of the teacher's config (its fine-tune)");
  }
  DistillTerms terms{.weights = kd, .levers = s.distill->levers};
  for (const auto& h : kd.old_descriptors) {
    if (static_cast<std::int64_t>(h.size()) != s.config->descriptor_dim) {
      return Status::invalid_argument("train: an old platform's descriptor has " + std::to_string(h.size()) +
                                      " floats, the model reads " + std::to_string(s.config->descriptor_dim));
    }
    terms.old_descriptors.push_back(descriptor_tensor(h, s.device));
  }
  // KD-only batches of platform k's pool need a KD term that reads them.
  bool kd_term = column && kd.column_weight > 0;
  for (std::size_t j = 0; j < terms.old_descriptors.size(); ++j) {
    kd_term = kd_term || old_term_weight(kd, s.distill->levers, j, /*old_bank=*/false) > 0;
  }
  // The ratios count measured batches only.
  std::int64_t measured = 0;
  for (const BatchSource& m : *sources) measured += batches_per_epoch(m.groups, s.shape);
  const torch::Tensor descriptor = sources->front().descriptor;
  if (!kd.unlabeled.empty() && kd.unlabeled_ratio > 0 && kd.max_unlabeled > 0 && kd_term) {
    auto built = build_pool(s);
    if (!built) return built.status();
    if (built->has_value()) {
      inputs->pool = std::move(**built);
      sources->push_back(
          unlabeled_source(*inputs->pool, descriptor, measured, kd.unlabeled_ratio, s, /*old_bank=*/false));
    }
  }
  const bool old_term = !terms.old_descriptors.empty() && kd.old_weight > 0;
  if (!kd.old_bank.empty() && kd.old_bank_ratio > 0 && kd.max_old_bank > 0 && old_term) {
    auto built = build_old_bank(s);
    if (!built) return built.status();
    if (built->has_value()) {
      inputs->old_bank = std::move(**built);
      sources->push_back(
          unlabeled_source(*inputs->old_bank, descriptor, measured, kd.old_bank_ratio, s, /*old_bank=*/true));
    }
  }
  if (Status st = fill_targets(s, **teacher, column.get(), sources); !st) return st;
  if (!kd.teacher_fisher.empty() && kd.ewc_weight > 0) {
    auto f = fisher_tensors(kd.teacher_fisher, model);
    if (!f) return f.status();
    terms.fisher = std::move(*f);
    // The anchor is T's weights, also when the student starts from the column.
    torch::NoGradGuard no_grad;
    for (const torch::Tensor& p : (*teacher)->score_model()->parameters())
      terms.anchor.push_back(p.detach().to(s.device).clone());
  }
  if (s.distill->levers.feature_weight > 0 && inputs->old_bank) {
    // The feature term's targets come from T at each bank batch (a d_model
    // row per program and old platform would not fit beside the bank).
    terms.teacher = (*teacher)->score_model();
    terms.teacher->to(s.device);
    terms.teacher->eval();
  }
  return terms;
}

Status mix_with_teacher(ScoreModel& student, std::string_view teacher_checkpoint, double teacher_mix) {
  if (!(teacher_mix >= 0 && teacher_mix <= 1)) return Status::invalid_argument("train: teacher_mix must be in [0, 1]");
  if (teacher_mix == 0) return Status::ok();
  auto teacher = CostModel::load(teacher_checkpoint);
  if (!teacher) return teacher.status().with_context("train: teacher");
  const std::shared_ptr<ScoreModel> t = (*teacher)->score_model();
  if (!same_layout(t->config(), student.config()))
    return Status::invalid_argument("train: teacher_mix needs a student of the teacher's config");
  if (Status s = mix_weights(student, *t, teacher_mix); !s) return s.with_context("train: teacher_mix");
  return Status::ok();
}

}  // namespace tcl::trainer
