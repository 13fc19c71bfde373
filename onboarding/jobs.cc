#include "onboarding/jobs.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/features.h"
#include "core/program_id.h"
#include "core/task_split.h"
#include "onboarding/best_of.h"
#include "onboarding/distill.h"
#include "onboarding/version_json.h"
#include "trainer/cost_model.h"

namespace tcl::onboarding {
namespace json = boost::json;

namespace {

// A job's starting point: a version to fine-tune ("init"), or for a distill
// the teacher (production); empty for a fresh model.
struct Start {
  std::optional<std::int64_t> version;
  std::string weights;
  std::vector<std::string> platforms;  // the version's
};

// What a student distill learns from besides the platform's measurements;
// owns what `targets` views (held by pointer, so the views stay put).
struct Plan {
  std::string fisher, column;
  std::vector<std::string> old_models;  // best-of: each old platform's model in the teacher (KD targets)
  std::vector<core::Record> unlabeled, old_bank;
  std::size_t unlabeled_read = 0, old_bank_read = 0;  // as read (kept after the records are freed)
  trainer::DistillTargets targets;
};

// One job's run: what every step reads.
struct Job {
  const JobRun& run;
  const JobOptions& o;
  RecordSource& source;
  JobObserver& observer;
  bool distill() const { return run.kind == registry::JobKind::kDistill; }
  bool cancelled() const { return run.cancel != nullptr && run.cancel->load(); }
  bool stopping() const { return run.stopping != nullptr && run.stopping->load(); }
  // The last epoch's progress (train()): the phases after it keep its numbers.
  json::object last_epoch{};
};

// The job's progress in a phase after the epochs: the last epoch's numbers
// with the phase and its own count (done, total, unit, ...).
void phase_progress(Job& job, std::string_view phase, const json::object& count) {
  json::object p = job.last_epoch;
  p["phase"] = phase;
  for (const auto& kv : count) p[kv.key()] = kv.value();
  job.observer.progress(p);
}

// A job that ends with no version and no error: cancelled, or stopped with
// its lease left to lapse so that another worker retries it.
JobOutcome no_version() { return std::optional<JobVersion>(); }

// A training's error as the job's outcome: cancelled because the worker is
// stopping is no version (the lease lapses and another worker retries it),
// not a failure.
JobOutcome failed_unless_stopping(const Job& job, const Status& s) {
  if (s.code() == StatusCode::kCancelled && job.stopping()) return no_version();
  return s;
}

Result<Start> read_start(RecordSource& source, const std::string& name, bool distill) {
  Start s;
  if (name.empty()) return s;
  auto id = source.resolve(name);
  if (!id) {
    if (distill) {
      return Status::failed_precondition("distill needs a production version to distill into: " +
                                         id.status().message());
    }
    return id.status().with_context("option 'init'");
  }
  auto weights = source.weights(*id);
  if (!weights) return weights.status();
  auto info = source.version(*id);
  if (!info) return info.status();
  s.version = *id;
  s.weights = std::move(*weights);
  s.platforms = info->platforms;
  return s;
}

// This platform's measurements, and nothing else (DESIGN §5.3): a
// deterministic share when there are far more than the job trains on.
Result<std::vector<core::Record>> read_measured(Job& job, const SourcePlatform& platform,
                                                std::unordered_set<std::string>* program_ids) {
  const double keep = share_to_keep(static_cast<double>(job.o.max_records), platform.measured + platform.failed,
                                    1.0 - job.o.eval_fraction);
  return job.source.measured_share(platform, keep, program_ids);
}

// The platform's candidates that are not measured (a distill's inputs
// without labels, DESIGN §5.2): about max_unlabeled of them, a deterministic
// share by program id when the pool is larger (the trainer caps it further).
Result<std::vector<core::Record>> read_unmeasured(Job& job, const SourcePlatform& platform,
                                                  const std::unordered_set<std::string>& measured) {
  const double keep = share_to_keep(static_cast<double>(job.o.max_unlabeled), platform.candidates);
  auto pool = job.source.unmeasured_pool(platform, measured, keep);
  if (!pool) return pool.status().with_context("reading the candidate pool");
  return pool;
}

// The old platforms' bank (DistillTargets::old_bank): programs of
// `old_platforms`' tasks, about max_old_bank in all (an equal share each).
Result<std::vector<core::Record>> read_old_bank(Job& job, const std::vector<std::string>& old_platforms) {
  std::vector<core::Record> bank;
  if (old_platforms.empty()) return bank;
  const double per_platform = static_cast<double>(job.o.max_old_bank) / static_cast<double>(old_platforms.size());
  for (const std::string& name : old_platforms) {
    auto old = job.source.platform(name);
    if (!old) return old.status().with_context("old platforms' bank");
    const double keep = share_to_keep(per_platform, old->measured + old->failed + old->candidates);
    auto programs = job.source.old_programs(*old, keep);
    if (!programs) return programs.status().with_context("reading the old platforms' bank");
    bank.insert(bank.end(), std::make_move_iterator(programs->begin()), std::make_move_iterator(programs->end()));
  }
  return bank;
}

// kFailedPrecondition when the teacher keeps per-platform adapters or pinned
// models: one distilled student cannot replace its platforms' models.
Status refuse_adapted_teacher(const Start& teacher) {
  auto adapted = trainer::own_model_platforms(teacher.weights);
  if (!adapted) return adapted.status().with_context("production");
  if (adapted->empty()) return Status::ok();
  std::string names;
  for (const std::string& a : *adapted) names += (names.empty() ? "" : ", ") + a;
  return Status::failed_precondition("production (version " + std::to_string(*teacher.version) +
                                     ") keeps per-platform adapters or pinned models (" + names +
                                     "): one distilled student cannot replace its platforms' models; distill "
                                     "with \"method\": \"adapter\" or \"best-of\"");
}

// The active column: the platform's fine-tuned copy of this teacher (a
// train job with "init", alias active.<platform>), or fine-tuned here.
Result<std::string> active_column(Job& job, const Start& teacher, const trainer::TrainRequest& request) {
  if (auto a = job.source.alias("active." + job.run.platform); a) {
    if (auto info = job.source.version(*a); info && info->parent == teacher.version) {
      auto weights = job.source.weights(*a);
      if (!weights) return weights.status();
      // An alias moved by hand may keep adapters.
      auto own = trainer::platform_checkpoint(*weights, job.run.platform);
      if (!own) return own.status().with_context("active." + job.run.platform);
      return std::move(*own);
    }
  }
  job.observer.progress(json::object{{"phase", "active column"}, {"records", request.data.records.size()}});
  const trainer::FineTune from_teacher{.init_checkpoint = teacher.weights, .auto_schedule = job.o.auto_schedule};
  auto tuned = trainer::train_platform(column_request(request, from_teacher, job.o.column_epochs), nullptr);
  if (!tuned) return tuned.status().with_context("active column");
  return std::move(tuned->checkpoint);
}

// The student's loss weights as the job's options give them.
trainer::DistillTargets option_weights(const JobOptions& o) {
  trainer::DistillTargets weights;
  weights.label_weight = o.label_weight;
  weights.column_weight = o.column_weight;
  weights.old_weight = o.old_weight;
  weights.ewc_weight = o.ewc_weight;
  weights.temperature = o.temperature;
  weights.unlabeled_ratio = o.unlabeled_ratio;
  weights.max_unlabeled = o.max_unlabeled;
  weights.old_bank_ratio = o.old_bank_ratio;
  weights.max_old_bank = o.max_old_bank;
  return weights;
}

// A student distill's plan (distill.h): the teacher's Fisher, the active
// column, the old platforms' descriptors, the unmeasured pool and the bank.
// With `column` given, that is the active column (best-of trains its own);
// with `old_models`, each old platform's KD target is its model there
// (best-of: the teacher may keep per-platform models).
Result<std::unique_ptr<Plan>> plan_student(Job& job, const SourcePlatform& platform, const Start& teacher,
                                           const trainer::TrainRequest& request,
                                           const std::unordered_set<std::string>& measured,
                                           const std::string* column_given = nullptr,
                                           const std::vector<std::string>* old_models = nullptr) {
  if (old_models == nullptr) {
    if (Status s = refuse_adapted_teacher(teacher); !s) return s;
  }
  auto d = std::make_unique<Plan>();
  if (auto f = job.source.fisher(*teacher.version); f) {
    d->fisher = std::move(*f);
  } else if (f.status().code() != StatusCode::kNotFound) {
    return f.status();
  }
  if (column_given != nullptr) {
    d->column = *column_given;
  } else {
    auto column = active_column(job, teacher, request);
    if (!column) return column.status();
    d->column = std::move(*column);
  }
  DistillSources sources;
  const std::vector<std::string> old = old_platforms(teacher.platforms, job.run.platform);
  for (const auto& name : old) {
    auto p = job.source.find_platform(name);
    if (!p) return p.status().with_context("teacher platform");
    const auto h = core::descriptor_of(p->platform);
    sources.old_descriptors.emplace_back(h.begin(), h.end());
  }
  const trainer::DistillTargets weights = option_weights(job.o);
  if (wants_unlabeled(weights)) {
    job.observer.progress(
        json::object{{"phase", "reading the candidate pool"}, {"records", request.data.records.size()}});
    auto pool = read_unmeasured(job, platform, measured);
    if (!pool) return pool.status();
    d->unlabeled = std::move(*pool);
    d->unlabeled_read = d->unlabeled.size();
  }
  if (wants_old_bank(weights, old.size())) {
    job.observer.progress(json::object{{"phase", "reading the old platforms' bank"}, {"platforms", old.size()}});
    auto bank = read_old_bank(job, old);
    if (!bank) return bank.status();
    d->old_bank = std::move(*bank);
    d->old_bank_read = d->old_bank.size();
  }
  sources.column_checkpoint = d->column;
  sources.teacher_fisher = d->fisher;
  sources.unlabeled = d->unlabeled;
  sources.old_bank = d->old_bank;
  d->targets = plan_distillation(weights, std::move(sources));
  if (old_models != nullptr) {
    d->old_models = *old_models;
    for (const std::string& m : d->old_models) d->targets.old_teachers.emplace_back(m);
  }
  return d;
}

// Sets `request`'s start: a fresh model, a fine-tune of `start` ("init"),
// the adapter on production's trunk, or the student's distillation (then
// `*plan` receives what it views). `*init` receives the checkpoint bytes
// `request` views.
Status set_start(Job& job, const SourcePlatform& platform, const Start& start,
                 const std::unordered_set<std::string>& measured, std::string* init, std::unique_ptr<Plan>* plan,
                 trainer::TrainRequest* request) {
  if (job.distill() && job.o.method == JobOptions::DistillMethod::kAdapter) {
    const trainer::FineTune tune{.auto_schedule = job.o.auto_schedule,
                                 .adapter = {.rank = job.o.adapter_rank, .layers = job.o.adapter_layers}};
    if (Status s = start_adapter_distill(start.weights, tune, init, request); !s) {
      return s.with_context("production (version " + std::to_string(*start.version) + ")");
    }
    return Status::ok();
  }
  if (!start.weights.empty()) {
    // The version's model of this platform (its adapter folded in, when it keeps one).
    auto own = trainer::platform_checkpoint(start.weights, job.run.platform);
    if (!own) return own.status().with_context("version " + std::to_string(*start.version));
    *init = std::move(*own);
  }
  trainer::FineTune tune{.init_checkpoint = *init, .auto_schedule = job.o.auto_schedule};
  if (job.distill()) {
    auto p = plan_student(job, platform, start, *request, measured);
    if (!p) return p.status();
    *plan = std::move(*p);
    request->start = trainer::Distill{.teacher = tune, .targets = (*plan)->targets};
  } else if (!init->empty()) {
    request->start = tune;
  }
  return Status::ok();
}

// The job's progress while it trains: "training" with the epoch, loss and
// validation top-1; after the epochs each phase of the trainer
// (trainer::PhaseProgress: "evaluating", "fisher", "saving") with its own
// count (done of total, in unit), the last epoch's numbers kept beside it.
Result<trainer::TrainResult> train(Job& job, trainer::TrainRequest& request) {
  const std::size_t records = request.data.records.size();
  job.last_epoch = json::object{{"phase", "training"}, {"records", records}};
  job.observer.progress(job.last_epoch);
  job.observer.training(job.o.epochs);
  const auto on_epoch = [&](int epoch, int epochs_now, double loss, double val_top1) {
    job.observer.epoch(epoch, epochs_now, loss, val_top1);
    json::object p{
        {"phase", "training"}, {"epoch", epoch}, {"epochs", epochs_now}, {"loss", loss}, {"records", records}};
    if (!std::isnan(val_top1)) p["val_top1"] = val_top1;
    job.observer.progress(p);
    job.last_epoch = std::move(p);
    return !job.cancelled();
  };
  request.resources.phase = [&](const trainer::PhaseProgress& phase) {
    phase_progress(job, phase.phase, {{"done", phase.done}, {"total", phase.total}, {"unit", phase.unit}});
  };
  auto trained = trainer::train_platform(request, on_epoch);
  request.resources.phase = {};  // it views this frame
  job.observer.trained();
  return trained;
}

// The figure the lineage compares versions on (distill.h's
// evaluate_standing_split) as the version's metrics keep it:
// metrics.<platform>.standing_split. `held_out`: whether the job trained
// this platform's model without those tasks; nullopt for a model the job did
// not train (an old platform's, the parent's).
void put_standing_split(Job& job, const std::string& name, const std::string& own, const trainer::Platform& platform,
                        const std::vector<core::Record>& records, std::optional<bool> held_out, json::object* metrics) {
  auto standing = evaluate_standing_split(own, records, platform, job.run.torch_threads);
  if (!standing) {
    job.observer.warning("platform " + name + ": no standing split figure: " + standing.status().to_string());
    return;
  }
  json::object figure = metrics_json(*standing);
  if (held_out) figure["held_out"] = *held_out;
  json::value& entry = (*metrics)[name];
  if (!entry.is_object()) entry = json::object{};
  entry.as_object()["standing_split"] = std::move(figure);
}

// Whether the job's model of its platform was trained without the standing
// split's tasks (its eval split holds them all: core::in_holdout nests).
bool job_holds_out_standing_split(const JobOptions& o) {
  return o.eval_fraction >= trainer::TrainRequest::default_data_options().eval_fraction;
}

// A student and its teacher on one platform, on what the gate judges
// (distill.h: every task of an old platform, the standing split of the new
// one, kJudgedProgramsPerTask programs each at most), and the student's
// standing split figure into `metrics` (put_standing_split).
Result<PairedScores> evaluate_platform(Job& job, const std::string& name, bool is_new, const std::string& student,
                                       const std::string& teacher, json::object* metrics) {
  auto platform = job.source.platform(name);
  if (!platform) return platform.status();
  JudgedRecords judged(is_new, kJudgedProgramsPerTask);
  if (Status read = job.source.judged_records(*platform, &judged); !read) return read;
  const std::vector<core::Record> records = judged.take();
  // Each version's model of this platform (its adapter folded in, if any).
  auto student_own = trainer::platform_checkpoint(student, name);
  if (!student_own) return student_own.status();
  auto teacher_own = trainer::platform_checkpoint(teacher, name);
  if (!teacher_own) return teacher_own.status();
  auto scores =
      evaluate_against_teacher(*student_own, *teacher_own, records, platform->platform, job.run.torch_threads);
  if (!scores) return scores;
  const std::optional<bool> held_out =
      name == job.run.platform ? std::optional<bool>(job_holds_out_standing_split(job.o)) : std::nullopt;
  put_standing_split(job, name, *student_own, platform->platform, records, held_out, metrics);
  return scores;
}

// A train job's model on its platform's standing split (put_standing_split),
// so that its row of the lineage reads as every other version's.
void judge_trained(Job& job, const std::string& weights, json::object* metrics) {
  phase_progress(job, "judging", {{"platform", job.run.platform}, {"done", 0}, {"total", 1}, {"unit", "platforms"}});
  auto platform = job.source.platform(job.run.platform);
  if (!platform) {
    job.observer.warning("no standing split figure: " + platform.status().to_string());
    return;
  }
  JudgedRecords judged(/*standing_split_only=*/true, kJudgedProgramsPerTask);
  if (Status read = job.source.judged_records(*platform, &judged); !read) {
    job.observer.warning("no standing split figure: " + read.to_string());
    return;
  }
  put_standing_split(job, job.run.platform, weights, platform->platform, judged.take(),
                     job_holds_out_standing_split(job.o), metrics);
}

// Every covered platform, the student against its teacher (read for
// measuring only, after the weights are final): every task of an old
// platform, the standing split of the new one. nullopt: cancelled (or the
// lease lost) while evaluating.
std::optional<GateDecision> judge_distilled(Job& job, const std::vector<std::string>& covered, const Start& teacher,
                                            const std::string& student, json::object* metrics) {
  std::vector<PlatformComparison> compared;
  json::object versus_parent;
  const double eval_fraction = trainer::TrainRequest::default_data_options().eval_fraction;
  for (std::size_t k = 0; k < covered.size(); ++k) {
    const std::string& name = covered[k];
    phase_progress(job, "judging", {{"platform", name}, {"done", k}, {"total", covered.size()}, {"unit", "platforms"}});
    const bool is_new = name == job.run.platform &&
                        std::find(teacher.platforms.begin(), teacher.platforms.end(), name) == teacher.platforms.end();
    json::object standing;  // put_standing_split's, kept beside the judged figures
    auto scores = evaluate_platform(job, name, is_new, student, teacher.weights, &standing);
    if (!scores) job.observer.warning("platform " + name + " not evaluated: " + scores.status().to_string());
    compared.push_back(comparison_of(name, is_new, judged_on(is_new), scores ? &*scores : nullptr));
    if (scores && compared.back().student) {
      json::object judged = metrics_json(scores->student);
      judged["judged_on"] = judged_on(is_new);
      if (const json::value* figure = standing.if_contains(name))
        judged["standing_split"] = figure->at("standing_split");
      (*metrics)[name] = std::move(judged);
      json::object versus = versus_json(compared.back());
      if (!is_new) {
        const auto split = standing_split_tasks(*scores, eval_fraction);
        versus["standing_split"] = versus_json(paired_comparison(name, false, "standing split", split));
      }
      versus_parent[name] = std::move(versus);
    }
    if (job.cancelled()) return std::nullopt;
  }
  (*metrics)["versus_parent"] = std::move(versus_parent);
  return promotion_decision(compared, job.o.margin);
}

// An adapter distill's version (trainer::attach_adapter): production's
// checkpoint with `adapter` kept for the platform, and production's Fisher,
// which is its trunk's.
Status keep_adapter_version(Job& job, const Start& production, const std::string& adapter, registry::NewVersion* v) {
  auto kept = trainer::attach_adapter(production.weights, job.run.platform, adapter);
  if (!kept) return kept.status();
  v->weights = std::move(*kept);
  auto fisher = job.source.fisher(*production.version);  // the trunk's: production's
  if (fisher) {
    v->fisher = std::move(*fisher);
  } else if (fisher.status().code() != StatusCode::kNotFound) {
    return fisher.status();
  }
  return Status::ok();
}

// The version of a finished training: weights, Fisher, metrics (and a
// distill's judgement against its teacher), config and summary. nullopt
// when cancelled while judging.
// A best-of distill's version: its composed checkpoint (best_of.h) and how
// each platform is served.
struct BestOfVersion {
  std::string weights;
  std::vector<Serving> serving;
};

JobOutcome describe_version(Job& job, const Start& start, const Plan* plan, trainer::TrainResult& trained,
                            BestOfVersion* best_of = nullptr) {
  JobVersion out;
  registry::NewVersion& v = out.version;
  v.parent = start.version;
  v.platforms = covered_platforms(job.distill() ? start.platforms : std::vector<std::string>{}, job.run.platform);
  v.weights = best_of ? std::move(best_of->weights) : std::move(trained.checkpoint);
  if (!trained.fisher.empty()) v.fisher = std::move(trained.fisher);
  if (job.distill() && job.o.method == JobOptions::DistillMethod::kAdapter) {
    if (Status kept = keep_adapter_version(job, start, trained.adapter, &v); !kept) return kept;
  }
  // No evaluation split (eval_fraction 0, e.g. an active column trained on a
  // few measured programs): no numbers rather than zeros.
  json::object metrics{{job.run.platform, trained.metrics.tasks > 0 ? json::value(metrics_json(trained.metrics))
                                                                    : json::value(json::object{{"eval_tasks", 0}})}};
  if (job.distill()) {
    auto decision = judge_distilled(job, v.platforms, start, v.weights, &metrics);
    if (!decision) return no_version();  // cancelled or lost the lease
    out.gate = *decision;
    v.status = out.gate->promote ? registry::VersionStatus::kPromoted : registry::VersionStatus::kCandidate;
  }
  if (!job.distill()) judge_trained(job, v.weights, &metrics);
  v.metrics_json = json::serialize(metrics);
  DistillConfig student;
  if (plan) student = DistillConfig{&plan->targets, plan->unlabeled_read, plan->old_bank_read, !plan->fisher.empty()};
  v.config_json = config_json(job.run.kind, job.o, trained, start.version, plan ? &student : nullptr);
  if (best_of) {
    json::value config = json::parse(v.config_json);
    config.as_object()["serving"] = serving_json(best_of->serving);
    v.config_json = json::serialize(config);
  }
  const bool fine_tune_scheduled = job.o.auto_schedule && !start.weights.empty();
  v.training_summary_json = training_summary_json(job.run.id, trained, fine_tune_scheduled, job.run.started);
  out.top1 = trained.metrics.top1.mean_ratio;
  return std::optional<JobVersion>(std::move(out));
}

// --- best-of (best_of.h) ---------------------------------------------------

// The adapter's training on `trunk` (a plain checkpoint) as the adapter
// method's: its rank, layers, epochs and learning rate.
trainer::TrainRequest adapter_request(const Job& job, trainer::TrainRequest request, std::string_view trunk) {
  request.start = trainer::FineTune{.init_checkpoint = trunk,
                                    .auto_schedule = job.o.auto_schedule,
                                    .adapter = {.rank = job.o.adapter_rank, .layers = job.o.adapter_layers}};
  request.optimisation.epochs = trainer::kDistillAdapterEpochs;
  request.optimisation.learning_rate = trainer::kDistillAdapterLearningRate;
  request.fisher.compute = false;
  return request;
}

// One training of the best-of workflow, its phase reported.
Result<trainer::TrainResult> train_phase(Job& job, const std::string& phase, const trainer::TrainRequest& request) {
  job.observer.progress(json::object{{"phase", phase}, {"records", request.data.records.size()}});
  auto trained = trainer::train_platform(request, [&](int, int, double, double) { return !job.cancelled(); });
  if (!trained) return trained.status().with_context(phase);
  return trained;
}

// The teacher's pieces a best-of distill starts from: its trunk, its model
// of the new platform (the trunk unless it has learned it), and each old
// platform's model.
struct TeacherPieces {
  std::string trunk, own;
  std::vector<std::string> old, old_models;
};

Result<TeacherPieces> teacher_pieces(const Start& teacher, const std::string& name) {
  TeacherPieces t;
  auto trunk = trainer::platform_checkpoint(teacher.weights, "");
  if (!trunk) return trunk.status().with_context("production");
  auto own = trainer::platform_checkpoint(teacher.weights, name);
  if (!own) return own.status().with_context("production");
  t.trunk = std::move(*trunk);
  t.own = std::move(*own);
  t.old = old_platforms(teacher.platforms, name);
  auto old_models = served_models(teacher.weights, t.old);
  if (!old_models) return old_models.status().with_context("production");
  t.old_models = std::move(*old_models);
  return t;
}

// The choice's split of `records`: the standing split's tasks (the gate's,
// never trained on) stay out of the validation part.
ChoiceSplit split_for_choice(const std::vector<core::Record>& records, const trainer::DatasetOptions& standing) {
  std::vector<core::Record> standing_records, rest;
  for (const core::Record& r : records) {
    const bool held = standing.eval_fraction > 0 && core::in_holdout(core::canonical_workload_key(r.workload_key),
                                                                     standing.eval_fraction, standing.split_salt);
    (held ? standing_records : rest).push_back(r);
  }
  ChoiceSplit choice = choice_split(rest);
  choice.fit.insert(choice.fit.end(), standing_records.begin(), standing_records.end());
  return choice;
}

// The four candidates trained on the choice's fit part and scored on its
// validation part (best_of.h), in candidate order.
Result<std::vector<CandidateScore>> score_candidates(Job& job, const SourcePlatform& platform, const Start& teacher,
                                                     const TeacherPieces& t, const ChoiceSplit& choice,
                                                     const std::unordered_set<std::string>& measured,
                                                     const trainer::TrainRequest& request) {
  std::vector<CandidateScore> scores;
  trainer::TrainRequest fit = request;
  fit.data.records = choice.fit;
  fit.resources.eval_each_epoch = false;
  fit.fisher.compute = false;
  const auto score = [&](Candidate c, const Result<trainer::TrainResult>& trained) -> Status {
    if (!trained) return trained.status();
    auto m = trainer::evaluate_checkpoint(trained->checkpoint, choice.validation, platform.platform, choice_options(),
                                          job.run.torch_threads);
    if (!m) return m.status().with_context("scoring " + std::string(candidate_name(c)));
    scores.push_back({c, *m});
    return Status::ok();
  };
  const trainer::FineTune from_own{.init_checkpoint = t.own, .auto_schedule = job.o.auto_schedule};
  auto column = train_phase(job, "choice: fine-tune", column_request(fit, from_own, job.o.column_epochs));
  if (Status s = score(Candidate::kFineTune, column); !s) return s;
  auto plan = plan_student(job, platform, teacher, fit, measured, &column->checkpoint, &t.old_models);
  if (!plan) return plan.status();
  trainer::TrainRequest student_fit = fit;
  student_fit.start = trainer::Distill{.teacher = {.init_checkpoint = t.trunk, .auto_schedule = job.o.auto_schedule},
                                       .targets = (*plan)->targets};
  auto student = train_phase(job, "choice: student", student_fit);
  if (Status s = score(Candidate::kStudent, student); !s) return s;
  auto on_student = train_phase(job, "choice: adapter on the student", adapter_request(job, fit, student->checkpoint));
  if (Status s = score(Candidate::kAdapterOnStudent, on_student); !s) return s;
  auto on_trunk = train_phase(job, "choice: adapter on the parent's trunk", adapter_request(job, fit, t.trunk));
  if (Status s = score(Candidate::kAdapterOnTeacher, on_trunk); !s) return s;
  return scores;
}

// How each platform of a best-of version is served, and why.
Result<std::vector<Serving>> serving_of(const Start& teacher, const TeacherPieces& t, const std::string& name,
                                        Choice rule, Candidate chosen, std::vector<CandidateScore> scores,
                                        std::int64_t validation_tasks) {
  auto teacher_own = trainer::own_model_platforms(teacher.weights);
  if (!teacher_own) return teacher_own.status();
  auto teacher_pinned = trainer::pinned_platforms(teacher.weights);
  if (!teacher_pinned) return teacher_pinned.status();
  const auto contains = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  std::vector<Serving> serving;
  for (const std::string& o : t.old) {
    const std::string there = contains(*teacher_pinned, o) ? "its pinned model"
                              : contains(*teacher_own, o)  ? "its adapter on the trunk, folded"
                                                           : "the trunk";
    serving.push_back({.platform = o,
                       .model = "pinned",
                       .origin = "the parent's model (" + there + ")",
                       .from_version = teacher.version,
                       .reason = "an old platform keeps the model that served it in the parent: its scores "
                                 "stay the parent's, bit for bit"});
  }
  Serving fresh{.platform = name};
  fresh.model = chosen == Candidate::kStudent            ? "student"
                : chosen == Candidate::kAdapterOnStudent ? "adapter"
                                                         : "pinned";
  fresh.origin = std::string(candidate_name(chosen));
  fresh.reason =
      rule == Choice::kFineTune
          ? "choice \"fine-tune\": the parent's model of the platform fine-tuned on its selection (the "
            "active column)"
      : rule == Choice::kSoup
          ? "choice \"soup\": the mean of the weights of the fine-tune and the adapter on the parent's "
            "trunk, both trained on the selection from the parent's model of the platform"
      : rule == Choice::kAdapter
          ? "choice \"adapter\": an adapter trained on the selection over the parent's trunk (after a "
            "best-of or student distill, the lineage's latest distilled student)"
      : rule == Choice::kAdapterOnStudent
          ? "choice \"adapter-on-student\", the default: an adapter trained on the selection over this version's "
            "trunk, the student that has learned the platform from its active column and labels; within 0.01 of "
            "the best mean of the student, the adapter method and the fine-tune on every held-out step measured "
            "(docs/continual.md)"
      : scores.empty() ? "no validation split (the selection has too few tasks): the student"
                       : "the best validation top-1 (task mean) of the candidates on " +
                             std::to_string(validation_tasks) + " tasks of the selection held out of their training";
  fresh.scores = std::move(scores);
  serving.push_back(std::move(fresh));
  return serving;
}

// A best-of distill (best_of.h): with choice "validation", the four
// candidates trained on the fit part of the selection and scored on its
// validation part, the choice; then the column, the student and the chosen
// one (the column with choice "fine-tune") on the whole selection; the
// version composed of the student, the old platforms' models pinned and the
// new platform's chosen one.
JobOutcome run_best_of(Job& job, const SourcePlatform& platform, const Start& teacher,
                       std::vector<core::Record>& records, const std::unordered_set<std::string>& measured,
                       const trainer::TrainRequest& request) {
  const std::string& name = job.run.platform;
  auto t = teacher_pieces(teacher, name);
  if (!t) return t.status();
  const ChoiceSplit choice = split_for_choice(records, request.data.options);
  std::vector<CandidateScore> scores;
  if (job.o.choice == Choice::kValidation && !choice.validation.empty()) {
    auto scored = score_candidates(job, platform, teacher, *t, choice, measured, request);
    if (!scored) return failed_unless_stopping(job, scored.status());
    scores = std::move(*scored);
    if (job.cancelled() || job.stopping()) return no_version();
  }
  const Candidate chosen = chosen_candidate(job.o.choice, scores);

  // On the whole selection: the column, the student (the trunk), and the chosen one.
  const trainer::FineTune from_own{.init_checkpoint = t->own, .auto_schedule = job.o.auto_schedule};
  auto column = train_phase(job, "active column", column_request(request, from_own, job.o.column_epochs));
  if (!column) return failed_unless_stopping(job, column.status());
  auto plan = plan_student(job, platform, teacher, request, measured, &column->checkpoint, &t->old_models);
  if (!plan) return plan.status();
  trainer::TrainRequest student_request = request;
  student_request.start = trainer::Distill{
      .teacher = {.init_checkpoint = t->trunk, .auto_schedule = job.o.auto_schedule}, .targets = (*plan)->targets};
  auto student = train(job, student_request);
  if (!student) return failed_unless_stopping(job, student.status());
  std::string chosen_model;
  if (chosen == Candidate::kFineTune) {
    chosen_model = column->checkpoint;
  } else if (chosen == Candidate::kSoup) {
    auto adapter = train_phase(job, "adapter on the parent's trunk", adapter_request(job, request, t->trunk));
    if (!adapter) return failed_unless_stopping(job, adapter.status());
    auto soup = trainer::interpolate_checkpoints(column->checkpoint, adapter->checkpoint, 0.5);
    if (!soup) return soup.status().with_context("the soup");
    chosen_model = std::move(*soup);
  } else if (chosen == Candidate::kAdapterOnStudent || chosen == Candidate::kAdapterOnTeacher) {
    const std::string& base = chosen == Candidate::kAdapterOnStudent ? student->checkpoint : t->trunk;
    auto adapter = train_phase(job, std::string(candidate_name(chosen)), adapter_request(job, request, base));
    if (!adapter) return failed_unless_stopping(job, adapter.status());
    chosen_model = chosen == Candidate::kAdapterOnStudent ? adapter->adapter : adapter->checkpoint;
  }
  records.clear();
  (*plan)->unlabeled = (*plan)->old_bank = {};
  BestOfVersion version;
  auto composed = compose_best_of({.student = student->checkpoint,
                                   .old_platforms = t->old,
                                   .old_models = t->old_models,
                                   .platform = name,
                                   .chosen = chosen,
                                   .chosen_model = chosen_model});
  if (!composed) return composed.status();
  version.weights = std::move(*composed);
  auto serving = serving_of(teacher, *t, name, job.o.choice, chosen, std::move(scores), choice.validation_tasks);
  if (!serving) return serving.status();
  version.serving = std::move(*serving);
  const Plan* p = plan->get();
  auto described = describe_version(job, teacher, p, *student, &version);
  if (described && *described && job.cancelled()) return no_version();  // cancelled meanwhile: nothing stored
  return described;
}

// Both workflows: read, start, train, describe.
JobOutcome run_job(Job& job) {
  auto platform = job.source.platform(job.run.platform);
  if (!platform) return platform.status();
  std::unordered_set<std::string> measured_ids;  // what the distill's unlabeled inputs leave out
  auto records = read_measured(job, *platform, job.distill() ? &measured_ids : nullptr);
  if (!records) return records.status();
  if (job.stopping()) return no_version();  // the lease lapses; another worker retries
  auto start = read_start(job.source, job.distill() ? std::string("production") : job.o.init, job.distill());
  if (!start) return start.status();

  trainer::TrainRequest request = train_request(job.o, platform->platform, *records);
  request.resources.device = job.run.train_device;
  request.resources.cancel = job.run.cancel;
  if (job.distill() && job.o.method == JobOptions::DistillMethod::kBestOf) {
    return run_best_of(job, *platform, *start, *records, measured_ids, request);
  }
  std::unique_ptr<Plan> plan;
  std::string init;  // what a FineTune in `request` views
  if (Status s = set_start(job, *platform, *start, measured_ids, &init, &plan, &request); !s) return s;
  auto trained = train(job, request);
  records->clear();
  records->shrink_to_fit();
  if (plan) plan->unlabeled = plan->old_bank = {};  // targets' views are not read after training
  if (!trained) return failed_unless_stopping(job, trained.status());
  auto version = describe_version(job, *start, plan.get(), *trained);
  if (version && *version && job.cancelled()) return no_version();  // cancelled meanwhile: nothing stored
  return version;
}

JobOutcome run_with(const JobRun& run, JobOptions options, RecordSource& source, JobObserver& observer) {
  if (auto device = trainer::resolve_device(run.train_device); device) {
    options.max_records = effective_max_records(options, *device);  // 0: every program (CUDA)
  }
  Job job{run, options, source, observer};
  return run_job(job);
}

}  // namespace

JobOutcome run_train(const JobRun& run, JobOptions options, RecordSource& source, JobObserver& observer) {
  if (run.kind != registry::JobKind::kTrain) return Status::internal("run_train: not a train job");
  return run_with(run, std::move(options), source, observer);
}

JobOutcome run_distill(const JobRun& run, JobOptions options, RecordSource& source, JobObserver& observer) {
  if (run.kind != registry::JobKind::kDistill) return Status::internal("run_distill: not a distill job");
  return run_with(run, std::move(options), source, observer);
}

double share_to_keep(double wanted, std::int64_t stored, double kept_fraction) {
  if (wanted <= 0 || stored <= 0) return 1.0;
  return std::min(1.0, 1.25 * wanted / kept_fraction / static_cast<double>(stored));
}

bool in_share(std::string_view program_id, double keep) {
  if (keep >= 1.0) return true;
  return static_cast<double>(std::stoul(std::string(program_id.substr(0, 8)), nullptr, 16)) / 4294967296.0 < keep;
}

}  // namespace tcl::onboarding
