// onboarding/distill.h — folding a platform into the lineage (DESIGN §5):
// the plan of a distill job (what the student learns from besides the
// platform's measurements) and the evaluation of the distilled version
// against its teacher on each platform it covers, which the promotion gate
// (promotion_gate.h) then reads. run_distill (jobs.h) reads the data through
// a record source and trains through trainer/; these are the steps between,
// plain functions over that data.
//
// Pure functions (evaluate_against_teacher runs the models on the CPU); thread-safe.
// Torch-free header.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/record.h"
#include "core/status.h"
#include "onboarding/promotion_gate.h"
#include "trainer/evaluation.h"
#include "trainer/train_job.h"

namespace tcl::onboarding {

// The adapter distill ("method": "adapter"; best-of's default choice trains
// the same on the teacher's trunk;
// docs/continual.md, "The per-platform adapter"): the new platform gets a
// low-rank adapter trained on production's trunk with every trunk weight
// frozen; the version is production's checkpoint with that adapter kept for
// the platform (trainer::attach_adapter: every other platform's model stays
// production's, bit for bit) and production's Fisher. run_distill and the
// benches start it here; the epochs and learning rate are the caller's
// (trainer::kDistillAdapterEpochs, kDistillAdapterLearningRate by default).
//
// Sets `request` to train the adapter: `tune` (its `adapter` and
// `auto_schedule` as the caller sets them) from production's trunk, no
// Fisher (the trunk's is production's). `*trunk` receives the trunk's bytes,
// which `request` views: they must outlive the training.
// kFailedPrecondition when production is not a Mamba student (an adapter
// adapts its dense layers), naming the student method; kDataLoss when
// `production` is not a checkpoint.
Status start_adapter_distill(std::string_view production, trainer::FineTune tune, std::string* trunk,
                             trainer::TrainRequest* request);

// The teacher's platforms other than `platform`: those the student must not forget.
std::vector<std::string> old_platforms(const std::vector<std::string>& teacher_platforms, const std::string& platform);

// The platforms a version made from `teacher_platforms` (empty for a train
// job) covers: those, then `platform` when it is not among them.
std::vector<std::string> covered_platforms(std::vector<std::string> teacher_platforms, const std::string& platform);

// What a distillation learns from besides the platform's measurements. Views:
// what they point at must outlive the plan.
struct DistillSources {
  std::string_view column_checkpoint;               // the active column (the teacher fine-tuned on the platform)
  std::string_view teacher_fisher;                  // empty: no EWC
  std::vector<std::vector<float>> old_descriptors;  // of old_platforms(), in order
  std::span<const core::Record> unlabeled;          // the unmeasured pool: KD-only inputs
  // The old platforms' bank: programs of their tasks, no measurement (the
  // old-platform KD terms' inputs besides this platform's programs).
  std::span<const core::Record> old_bank;
};

// The weight of the active column's KD term for a student that keeps
// `old_platforms` platforms: `per_old_platform` (the job's column_weight)
// times their count, at least once. The old platforms' KD is a sum, old_weight
// each, so a constant weight would give the new platform's teacher a smaller
// share at every step; scaled, the column keeps old_weight : column_weight
// against each old platform (docs/continual.md).
double column_term_weight(double per_old_platform, std::size_t old_platforms);

// Whether the unmeasured pool is read at all: `weights` ask for unlabeled inputs.
bool wants_unlabeled(const trainer::DistillTargets& weights);

// Whether the old platforms' bank is read at all: there are old platforms
// and `weights` give their KD term and the bank a share.
bool wants_old_bank(const trainer::DistillTargets& weights, std::size_t old_platforms);

// The targets of the student: the loss weights, temperature, and the
// unlabeled pool's and the bank's ratio and cap of `weights`, with the
// sources (a bench's levers, trainer::DistillLevers, are set beside them).
// `weights.column_weight` is per old platform (the job's option); the plan's
// is the term's, column_term_weight() of it and the sources' old platforms.
trainer::DistillTargets plan_distillation(const trainer::DistillTargets& weights, DistillSources sources);

// The active column's training when none fits the teacher: the job's
// `request` (data, model, schedule) fine-tuned from `teacher` (its checkpoint
// and auto_schedule), `epochs` epochs at fine-tuning's learning rate
// (Optimisation's default: the request's may be the student's),
// no Fisher (the column is never distilled from), no per-epoch evaluation.
trainer::TrainRequest column_request(trainer::TrainRequest request, const trainer::FineTune& teacher, int epochs);

// What the promotion gate judges a platform on (a 0.01 loss must show).
// An old platform: ALL its measured tasks — the lineage must keep every
// one, the teacher and the student have both trained on most of them
// (forgetting shows there too: the distillation never reads their
// measurements), and 388 judged tasks of x86-24c resolve what its 36-task
// standing split cannot; the standing split's tasks are reported apart
// (standing_split_tasks). The new platform: its standing split only — the
// student trained on the rest, and the teacher's zero-shot is judged on
// held-out tasks. Each task at most kJudgedProgramsPerTask measured
// programs (the lowest program ids: uniform, independent of upload order).
// 256: x86-24c is judged on 95k programs (1.6 GB, ~30 s on 2 busy cores;
// docs/benchmarks.md).
inline constexpr std::int64_t kJudgedProgramsPerTask = 256;

// A task's top-1 is one argmax: which program a model puts first flips
// between near-equal programs, and that noise dominates the paired
// difference (x86-24c, a teacher and its distilled student, 388 tasks: se
// 0.0097 of the task-mean difference). So the gate deals each task's
// programs into sets of kProgramsPerSet (in program-id order, i mod k, k =
// clamp(n / kProgramsPerSet, 1, kMaxSets): trainer::set_groups) and averages
// top-1 and the tuning proxy (geometrically) over the sets: se 0.0069 on the
// same pair, 0.0033 between two trainings (docs/benchmarks.md).
// 64 is also a measurement round of TVM's auto-scheduler: top-1 among 64
// candidates is the pick a tuner makes. The sum ratio sums best and
// best-in-top-1 over the sets (trainer::top1_in_sets, the same dealing).
using trainer::kMaxSets;
using trainer::kProgramsPerSet;

// The words for the reasons: what judged_on(is_new) tasks are.
std::string judged_on(bool is_new);

// The records the gate judges a platform on, gathered as they stream in
// (any order): per task (canonical workload key), the `per_task` measured
// records with the lowest program ids — the same choice whatever the order
// — of every task, or with standing_split_only of the standing split's
// tasks only (core::in_holdout, TrainRequest::default_data_options()).
// Failed measurements and candidates are not kept. Memory: per_task records
// per task at most. Not thread-safe.
class JudgedRecords {
 public:
  explicit JudgedRecords(bool standing_split_only, std::int64_t per_task = kJudgedProgramsPerTask);
  void add(std::string_view program_id, const core::Record& record);
  // The records kept, task by task, each task's by program id.
  std::vector<core::Record> take();

 private:
  struct Kept {
    std::string id;
    core::Record record;
  };
  bool standing_split_only_;
  std::int64_t per_task_;
  std::map<std::string, std::vector<Kept>> tasks_;  // each a max-heap on id
};

// A version (student) and its teacher scored on the same programs.
struct PairedScores {
  trainer::RankingMetrics student, teacher;  // over every task scored
  std::vector<std::string> task_keys;        // canonical workload keys, one per entry of `tasks`
  std::vector<TaskPair> tasks;               // every task with ≥ 2 programs, averaged over its sets
};

// Student and teacher (checkpoint bytes) on `records` of one platform, all
// of them (the caller picks the tasks and caps them: jobs.h's run_distill
// reads every task of an old platform, the standing split of the new one),
// through trainer::score_checkpoints; per task, the values averaged over
// its sets of programs (kProgramsPerSet above). Errors: its errors.
Result<PairedScores> evaluate_against_teacher(std::string_view student, std::string_view teacher,
                                              std::span<const core::Record> records, const trainer::Platform& platform,
                                              int threads);

// One version's model of a platform on the platform's standing split: the
// records of `records` whose task is in the standing split (core::in_holdout,
// TrainRequest::default_data_options(), salt 0; other tasks are left out)
// scored by `checkpoint` through trainer::score_checkpoints, each task's
// programs ranked as one (trainer::evaluate_ranking: top-1, the random
// floor, counts). Given JudgedRecords' records (any of them: every task, or
// the standing split only, keep the same programs of those tasks), it is the
// figure the lineage compares versions on, every version of every platform
// (version_json's "standing_split"): the same programs for every version
// while the platform's measurements stay the same. kFailedPrecondition when
// no task of the standing split has 2 measured programs; else its errors.
Result<trainer::RankingMetrics> evaluate_standing_split(std::string_view checkpoint,
                                                        std::span<const core::Record> records,
                                                        const trainer::Platform& platform, int threads);

// The tasks of `scores` in the platform's standing evaluation split
// (core::in_holdout with `eval_fraction`, salt 0): reported apart.
std::vector<TaskPair> standing_split_tasks(const PairedScores& scores, double eval_fraction);

// What the promotion gate compares for one platform (paired_comparison of
// every task of `scores`); `scores` null: not evaluated (no data).
PlatformComparison comparison_of(const std::string& platform, bool is_new, std::string judged_on,
                                 const PairedScores* scores);

}  // namespace tcl::onboarding
