// onboarding/best_of.h — the best-of distill ("method": "best-of"; issue 48,
// docs/continual.md "Best-of: the version keeps per platform the model that
// serves it best"). A distill step from production T:
//   - trains the student S as the student method does (it carries the lineage
//     forward: the trunk of the version, the model of every platform the
//     version has not learned, and the next step's teacher), with each old
//     platform's KD target taken from the model that serves that platform in
//     T (DistillTargets::old_teachers: served_models), so that the trunk
//     learns from every platform's best model, not only from T's trunk;
//   - gives the NEW platform an adapter on the student (Choice
//     kAdapterOnStudent, the default), the adapter on T's trunk (kAdapter),
//     the fine-tune of T's model of it on its selection (the
//     active column, the student's teacher for it; Choice kFineTune), or,
//     with Choice kValidation, the candidate that
//     scores best on a validation split of its own selection (choice_split:
//     whole tasks, never the held-out tasks that are reported): the student,
//     an adapter on the student's trunk, an adapter on T's trunk, or the
//     fine-tune, each first trained on the selection less the validation
//     tasks, then the chosen one again on the whole selection;
//   - keeps for every OLD platform the model that served it in T, pinned
//     (trainer::pin_platform: T's model of it as plain checkpoint bytes), so
//     its scores are T's bit for bit; no old platform's measurement is read.
// The version's checkpoint is the student with those per-platform models
// (compose_best_of); trainer::CostModel::load_for_platform serves each.
//
// Pure functions over bytes and records; thread-safe. Torch-free header.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "core/record.h"
#include "core/status.h"
#include "trainer/dataset.h"
#include "trainer/evaluation.h"

namespace tcl::onboarding {

// The new platform's candidate models, in the order that breaks a tie (the
// student first: it needs nothing beside the trunk).
// kSoup is no candidate of the validation choice: it is Choice kSoup's model.
enum class Candidate { kStudent, kAdapterOnStudent, kAdapterOnTeacher, kFineTune, kSoup };
inline constexpr Candidate kCandidates[] = {Candidate::kStudent, Candidate::kAdapterOnStudent,
                                            Candidate::kAdapterOnTeacher, Candidate::kFineTune};
// "student", "adapter on the student", "adapter on the parent's trunk", "fine-tune",
// "soup of the fine-tune and the adapter on the parent's trunk".
std::string_view candidate_name(Candidate candidate);

// How the new platform's model is chosen (the job option "choice").
//   kFineTune    always the fine-tune (the active column), which costs
//                nothing beyond the student (the column is its teacher).
//                It trailed the adapter on every first step in the pooled
//                means (by 0.017-0.067; docs/continual.md, "What the
//                ensembles measured").
//   kValidation  the best validation top-1 of the four candidates, trained
//                on the selection less choice_split's validation tasks
//                (about twice a student distill). On 14-23 validation tasks
//                it chose an adapter where the fine-tune scored higher on
//                held-out tasks (docs/continual.md, "Best-of").
//   kSoup        the weights' mean of the fine-tune and the adapter on T's
//                trunk, folded (trainer::interpolate_checkpoints at 0.5: both
//                start from T's model of the platform, so the mean is a model
//                soup). The adapter led the fine-tune on some steps and
//                trailed it on others; the soup scored under both in 9 of
//                10 runs (docs/continual.md, "The soup").
//   kAdapter     the adapter on T's trunk (kAdapterOnTeacher), folded and
//                pinned: on the first step the adapter method's training
//                (at its defaults) on the first trunk; after a best-of or
//                student step, an adapter on the latest distilled student,
//                which has learned from every platform before. The
//                default from 2026-12-04 until kAdapterOnStudent; it missed
//                item 1 of issue 48 on B's gpu-h100 and gpu-v100, C's x86-16c and A's gpu-v100
//                (docs/continual.md, "Best-of becomes the default").
//   kAdapterOnStudent
//                an adapter on this step's student (Candidate
//                kAdapterOnStudent): it starts from a trunk that has already
//                learned the new platform from the column and the labels,
//                kept as an adapter on the version's trunk. The default:
//                the best worst step of the configurations on the
//                validation split, and within 0.01 of the best mean of
//                the student, the adapter method and the fine-tune on every
//                step measured on held-out splits (docs/continual.md, "The
//                two levers measured").
enum class Choice { kFineTune, kValidation, kSoup, kAdapter, kAdapterOnStudent };
inline constexpr Choice kChoices[] = {Choice::kFineTune, Choice::kValidation, Choice::kSoup, Choice::kAdapter,
                                      Choice::kAdapterOnStudent};
inline constexpr Choice kDefaultChoice = Choice::kAdapterOnStudent;
// "fine-tune", "validation", "soup", "adapter", "adapter-on-student".
std::string_view choice_name(Choice choice);
// The Choice named `name` (choice_name's), or none.
std::optional<Choice> choice_named(std::string_view name);

// The share of the selection's tasks that judges the candidates, and the salt
// of that split (core::in_holdout): independent of the evaluation splits'
// salts (0 and the benches' small salts).
inline constexpr double kChoiceFraction = 0.25;
inline constexpr std::uint64_t kChoiceSalt = 4801;

// The new platform's measured selection split for the choice: the records of
// whole tasks with core::in_holdout(canonical key, fraction, salt) judge the
// candidates (validation), the rest trains them (fit). When either part
// would be empty (a selection of one task, or every task drawn), the
// validation part is empty and fit is the whole selection: then the student
// is chosen (choose_candidate sees no score).
struct ChoiceSplit {
  std::vector<core::Record> fit{}, validation{};
  std::int64_t fit_tasks = 0, validation_tasks = 0;
};
ChoiceSplit choice_split(std::span<const core::Record> selection, double fraction = kChoiceFraction,
                         std::uint64_t salt = kChoiceSalt);

// trainer::evaluate_checkpoint's options that score exactly the validation
// part of choice_split(…, fraction, salt) (every program of its tasks, at
// most 20,000).
trainer::DatasetOptions choice_options(double fraction = kChoiceFraction, std::uint64_t salt = kChoiceSalt);

// A candidate trained on the fit part and scored on the validation part.
struct CandidateScore {
  Candidate candidate = Candidate::kStudent;
  trainer::RankingMetrics validation{};  // tasks 0: not scored (it takes no part)
};

// The candidate with the highest validation top-1 task-mean; a tie goes to
// the earlier in kCandidates. The student when none was scored.
Candidate choose_candidate(std::span<const CandidateScore> scores);

// The new platform's model under `rule`: the fine-tune for kFineTune, the
// soup for kSoup, the adapter on T's trunk for kAdapter, the adapter on the
// student for kAdapterOnStudent, choose_candidate(scores) for kValidation.
Candidate chosen_candidate(Choice rule, std::span<const CandidateScore> scores);

// Each of `platforms`' model in `version` (trainer::platform_checkpoint:
// its pinned model, its adapter folded in, or the trunk), as plain
// checkpoint bytes, in order: the old platforms' KD teachers and the models
// the best-of version pins. Errors: platform_checkpoint's.
Result<std::vector<std::string>> served_models(std::string_view version, std::span<const std::string> platforms);

// What a best-of version is made of.
struct BestOfParts {
  std::string_view student{};  // plain checkpoint: the trunk
  // The old platforms and their models in the parent (served_models), pinned.
  std::span<const std::string> old_platforms{};
  std::span<const std::string> old_models{};
  std::string platform{};  // the new one
  Candidate chosen = Candidate::kStudent;
  // kAdapterOnStudent: the adapter's bytes (TrainResult::adapter, trained on
  // `student`); kAdapterOnTeacher, kFineTune and kSoup: the plain model
  // (TrainResult::checkpoint: the adapter folded into T's trunk, the
  // fine-tune, or their soup); unused for the student.
  std::string_view chosen_model{};
};

// The version's checkpoint: `student` with each old platform's model pinned
// and the new platform's chosen model (an adapter on the student, or pinned;
// nothing for the student). kInvalidArgument: old_platforms and old_models
// differ in count, or the chosen model is missing; attach_adapter's and
// pin_platform's errors.
Result<std::string> compose_best_of(const BestOfParts& parts);

// How a version serves one platform, and why: GET /v1/models/{version}'s
// "serving" (the version's config, written by the job).
struct Serving {
  std::string platform{};
  // "student" (the trunk), "adapter" (an adapter on the trunk), "pinned"
  // (a whole model of its own).
  std::string model{};
  std::string origin{};                        // what the model is: candidate_name(), "the parent's model", ...
  std::optional<std::int64_t> from_version{};  // pinned from this version's model of the platform
  std::string reason{};
  std::vector<CandidateScore> scores{};  // the new platform: what chose it (validation top-1 and tuning proxy)
};

// {platform: {"model", "origin", "from_version"?, "reason", "validation"?:
// [{"candidate", "top1", "tuning_proxy", "tasks"}]}}.
boost::json::object serving_json(std::span<const Serving> serving);

}  // namespace tcl::onboarding
