// onboarding/job_options.h — the options of a train or distill job, the
// knobs of the workflows in jobs.h: the body of POST /v1/platforms/{name}/jobs
// less "kind", stored as the job's options_json. One parser for both
// readers: the handler checks a job's options before queueing it (400 naming
// the option), and run_train/run_distill (jobs.h) read them again when the
// job runs.
//
// Defaults are TrainRequest's and DistillTargets'. A distill's "method" is
// "best-of" by default, with "choice": "adapter-on-student" (best_of.h): the student
// at 12 epochs, its column at 12 (trainer::kDistillStudentEpochs,
// kDistillColumnEpochs) and the student's learning rate
// (trainer::kDistillStudentLearningRate); the new platform's adapter
// (trainer::kDistillAdapter, its rank and layers the options adapter_rank
// and adapter_layers) at kDistillAdapterEpochs and
// kDistillAdapterLearningRate. best-of takes both methods' options. With
// "method": "adapter" alone the adapter trains at 24 epochs and learning
// rate 0.01; with "method": "student" the student as above. The student's
// options (the KD and EWC weights, the pool, the bank, column_epochs) are
// refused with the adapter, and the adapter's with the student.
// Unknown keys and values out of bounds are kInvalidArgument naming the
// option. "init" is only checked for form here:
// the worker resolves the alias or version.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/record.h"
#include "core/status.h"
#include "onboarding/best_of.h"
#include "registry/job_queue.h"
#include "trainer/device.h"
#include "trainer/train_job.h"

namespace tcl::onboarding {

struct JobOptions {
  int epochs = trainer::TrainRequest{}.optimisation.epochs;
  // AdamW peak of what the job trains: a distill's adapter or student (the
  // student's active column fine-tunes at Optimisation's default,
  // onboarding::column_request).
  double learning_rate = trainer::TrainRequest{}.optimisation.learning_rate;
  // Training programs at most; 0 = not given: effective_max_records picks by device.
  std::int64_t max_records = 0;
  double time_budget_s = trainer::TrainRequest{}.resources.time_budget_s;
  double eval_fraction = trainer::TrainRequest::default_data_options().eval_fraction;
  std::uint64_t seed = 0;
  std::string model = "mamba";
  // Fine-tune from this version (alias or number) instead of starting fresh:
  // the result is the platform's active column (alias active.<platform>).
  std::string init;
  // Distill only: how the new platform joins the lineage (docs/continual.md).
  // kBestOf is the default (issue 48, docs/continual.md "Best-of becomes the default").
  //   kAdapter  a low-rank adapter for this platform on production's frozen
  //             weights; the version is production plus the adapter, so
  //             every old platform's model stays as it was;
  //   kStudent  the distilled student: one model for every platform, with
  //             KD from the column and the teacher and EWC (below);
  //   kBestOf   the student as the trunk, and per platform the model that
  //             serves it best (onboarding/best_of.h): the new platform's
  //             by `choice` (by default an adapter on the new student;
  //             or the adapter on production's trunk, the fine-tune, or the
  //             best on a validation split of its selection among the
  //             student, adapters and the fine-tune);
  //             every old platform's kept as production had it.
  //             Takes both methods' options (epochs and learning_rate are
  //             the student's; the adapters train at kDistillAdapterEpochs,
  //             kDistillAdapterLearningRate).
  enum class DistillMethod { kAdapter, kStudent, kBestOf };
  DistillMethod method = DistillMethod::kBestOf;
  // best-of only: "choice": "fine-tune", "validation", "soup", "adapter" or "adapter-on-student".
  Choice choice = kDefaultChoice;
  int adapter_rank = trainer::kDistillAdapter.rank;
  trainer::AdapterLayers adapter_layers = trainer::kDistillAdapter.layers;
  // Distill with the student (trainer::DistillTargets), and the promotion gate's margin.
  double label_weight = trainer::DistillTargets{}.label_weight;
  double column_weight = trainer::DistillTargets{}.column_weight;
  double old_weight = trainer::DistillTargets{}.old_weight;
  double ewc_weight = trainer::DistillTargets{}.ewc_weight;
  double temperature = trainer::DistillTargets{}.temperature;
  double unlabeled_ratio = trainer::DistillTargets{}.unlabeled_ratio;  // the unmeasured pool as KD inputs
  std::int64_t max_unlabeled = trainer::DistillTargets{}.max_unlabeled;
  // The old platforms' bank (their programs, no measurement) as inputs of the
  // old-platform KD term: batches per measured batch, programs at most.
  double old_bank_ratio = trainer::DistillTargets{}.old_bank_ratio;
  std::int64_t max_old_bank = trainer::DistillTargets{}.max_old_bank;
  double margin = 0.01;
  int column_epochs = 3;  // fine-tuning the active column when none exists (a distill: trainer::kDistillColumnEpochs)
  std::int64_t min_steps = 0;  // Optimisation::min_steps (the column's too)
  // Early stopping (the column's too): DatasetOptions::validation_fraction, Optimisation::patience.
  double validation_fraction = 0;
  bool validation_by_tasks = false;  // "validation_by": "tasks" (else "programs")
  int patience = 0;
  bool refit = false;
  // FineTune::auto_schedule (fine-tuning only: a train job with init, a
  // distill and its column): the long schedule when the starting model orders
  // the platform's measured pairs no better than a coin.
  bool auto_schedule = false;
};

std::string_view distill_method_name(JobOptions::DistillMethod method);  // "adapter", "student", "best-of"

// `text` is a JSON object of options (the request body less "kind").
Result<JobOptions> parse_job_options(std::string_view text, registry::JobKind kind);

// The cap a job trains under: what it asked for, else
// trainer::default_max_records(train_device) (every program on CUDA, 100,000
// on the CPU).
std::int64_t effective_max_records(const JobOptions& o, trainer::Device train_device);

// The training request of a job's options on `records` of `platform`: the
// one builder, for the job workflows (jobs.h) and the benches that train as
// a job does. Device, threads, cancel and start are the caller's to set;
// `records` must outlive the request.
trainer::TrainRequest train_request(const JobOptions& o, const trainer::Platform& platform,
                                    std::span<const core::Record> records);

}  // namespace tcl::onboarding
