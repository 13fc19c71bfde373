// trainer/train_job.h — train one model on one platform's records and
// evaluate it on held-out tasks: the entry point of the daemon's training
// worker and of bench_quality. Torch-free: records in, checkpoint bytes and
// plain metrics out, Status for every failure (torch exceptions are caught).
//
// Data flow (each step in a file of its own, internal to trainer/):
//   records ─ build_dataset (dataset.h: labels, groups, task split, caps, tokens)
//   → make_score_model(config), or the FineTune's / Distill's checkpoint
//   → batch sources: the platform, JointTraining's platforms, a Distill's
//     unmeasured pool with its targets (distillation.h)
//   → epochs of steps (epoch_loop.h: batches.h, objective.h = LambdaRank +
//     distill_loss.h, AdamW, cosine LR; early_stopping.h on a validation split)
//   → evaluate_ranking on the eval split (evaluation.h) → the Fisher
//     (fisher.h) → CostModel::save bytes; refit and auto_schedule around it
//
// The request's shape carries its rules: data, model, optimisation,
// resources, and exactly one start (TrainStart: a fresh model, a fine-tune,
// joint training, a distillation), so joint + distill cannot be written; a
// prebuilt dataset has its own request (DatasetTrainRequest), which has no
// refit, fine-tune, joint platforms or unmeasured pool to refuse.
//
// One epoch visits every training program once: each task's programs are
// shuffled and cut into chunks of at most `group_size` (near-equal sizes);
// a step takes `groups_per_batch` chunks (of similar length when bucketing),
// each its own LambdaRank group, so
// a step costs O(groups_per_batch · group_size) forward work and
// O((groups_per_batch · group_size)²) loss work, whatever the task sizes.
// Each batch is cut to its longest sequence (padding costs nothing).
//
// Learning rate: linear warm-up, then cosine decay to 5% of the peak over
// the planned steps (epochs × steps per epoch). Under a time budget the
// schedule follows whichever is further along, the steps or the clock, so a
// run cut by the budget has still annealed.
//
// Reproducibility: the same request, seed and thread count give the same
// checkpoint bytes on the CPU as long as the time budget does not bind (the
// clock only takes over the schedule when training falls a step behind
// the budget's pace), the same bytes as time_budget_s = 0. Model init, dropout and
// batch order all derive from `seed`, on every device (init and dropout
// masks are drawn on the CPU). On CUDA the same run differs from the CPU's
// by float rounding (other kernels and summation orders), which grows over
// the steps; tests/trainer/cuda_test.cc bounds it on a short run. Two CUDA
// runs of one request are not bit-identical either: some kernel sums in a
// varying order (not pinned down; cuDNN's deterministic flag and
// CUBLAS_WORKSPACE_CONFIG did not remove it), and over the default job's
// 600 steps the runs drift as runs of different seeds do
// (docs/benchmarks.md, "Training on CUDA").
//
// Cost (2-core dev box, 2 threads, default student, x86-24c tokens of ~25
// steps): about 1.2k programs/s of training when the box is quiet, 2–5x less
// when it is shared; bench_quality --job measures the defaults end to end.
// On CUDA (one H200) the default job on all of x86-24c takes 12 s
// (bench_train; docs/benchmarks.md, "Training on CUDA").
//
// Thread-safety: train_platform may run on any thread; it sets torch's
// process-wide intra-op thread count for its duration when `threads` > 0
// (and restores it), so run one job per process at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/record.h"
#include "core/status.h"
#include "trainer/dataset.h"
#include "trainer/device.h"
#include "trainer/evaluation.h"
#include "trainer/model_config.h"

namespace tcl::trainer {

// --- data ------------------------------------------------------------------
// Records of ONE platform. Read during the call only.
struct TrainData {
  std::span<const core::Record> records{};
  Platform platform{};  // target + hardware params of those records
  // Split, caps and encoding. Defaults (default_options()): 10% of tasks
  // held out (salt 0, the platform's standing split), at most 100k training
  // programs and 20k eval programs (a seeded share of every task), so that a
  // job on the whole x86-24c set (533k records) fits its default time
  // budget on 2 cores.
  DatasetOptions options = default_options();
  // Refit (with a validation split, options.validation_fraction > 0): once
  // the best epoch is known, train again from the same start on the
  // training and validation programs together, with the same planned
  // schedule cut after that many epochs; that model is the result (metrics,
  // eval scores, Fisher), while best_epoch, validation and epoch_validation
  // tell of the first run. The progress callback sees both runs, the
  // refit's epochs numbered after the first run's (epochs planned = those
  // done + the refit's). Costs a second training. Skipped (the early-stopped
  // model returned, refitted = false) when the time budget cut either run.
  bool refit = false;

  static DatasetOptions default_options() {
    DatasetOptions d;
    d.eval_fraction = 0.1;
    d.max_records = 100'000;
    d.max_eval_records = 20'000;
    return d;
  }
};

// Training programs at most when a job names none, by where it trains: on
// CUDA every program (0, no cap) — all of x86-24c trains in about a minute
// on an H100 and scores better on held-out tasks than any cap
// (docs/benchmarks.md); on the CPU TrainData::default_options()'s 100,000, which fit the
// default time budget. `device` is a resolved one (resolve_device).
std::int64_t default_max_records(Device device);

// --- optimisation ------------------------------------------------------------
enum class LabelLoss { kLambdaRank, kListwise };

struct Optimisation {
  int epochs = 3;
  // At least this many optimizer steps: a small set (a 10% onboarding
  // budget is a few dozen batches) gets more epochs. 0 = `epochs` as given.
  std::int64_t min_steps = 0;
  std::int64_t groups_per_batch = 8;  // chunks (LambdaRank groups) per step
  std::int64_t group_size = 64;       // programs per chunk, at most
  // Batch chunks of similar length (fewer padded tokens: 1.5x fewer on the
  // GPU set, 1.7x on CPU sets); the batch order stays random.
  bool bucket_by_length = true;
  double learning_rate = 2e-3;    // AdamW peak (see "Learning rate" above)
  double warmup_fraction = 0.02;  // linear warm-up share of the planned steps
  double weight_decay = 1e-2;     // matrices only (optimizer.h)
  double grad_clip_norm = 1.0;    // 0 = no clipping
  // The loss on measured labels (objective.h): LambdaRank (lambda_rank.h;
  // gain label^gain_power), or the listwise softmax towards
  // softmax(listwise_beta · label) within each group.
  LabelLoss label_loss = LabelLoss::kLambdaRank;
  double lambda_sigma = 1.0;    // LambdaRank logistic slope (lambda_rank.h)
  std::int64_t ndcg_at = 0;     // LambdaRank NDCG truncation, 0 = whole group
  double gain_power = 1.0;      // LambdaRank gain = label^gain_power
  double listwise_beta = 20.0;  // kListwise: the target's sharpness
  // > 0: the weights judged and returned are an exponential moving average
  // of the steps' (optimizer.h WeightAverage, this decay a step); 0 = the
  // last step's.
  double ema_decay = 0.0;
  std::uint64_t seed = 0;  // model init, dropout and batch order
  // Early stopping, with a validation split (DatasetOptions::
  // validation_fraction > 0: programs or whole tasks kept out of training,
  // validation_split): the validation split is scored after every epoch
  // (top-1 mean ratio, ties to the earlier epoch), the call returns the
  // weights of the best epoch, and training stops once `patience` epochs in
  // a row did not beat it (0 = every planned epoch runs). Small budgets
  // need it: the steps that a 10% GPU selection needs over-fit a 10% CPU
  // one (docs/benchmarks.md, onboarding).
  int patience = 0;
  // Stop after this many epochs, the schedule still planned over all of
  // them (refit uses it); 0 = every planned epoch.
  int stop_after_epochs = 0;
};

// --- resources -----------------------------------------------------------------
// Where a training call is after its epochs, for a job's progress: the
// phase and how far it is, `done` of `total` in `unit`. The phases, in order:
//   "evaluating"  the eval split scored (unit "programs")
//   "fisher"      the Fisher information (fisher.h; unit "batches")
//   "saving"      the checkpoint written (unit "checkpoints", 0 then 1)
// Each phase reports done 0 as it starts, then as it advances, and done =
// total as it ends; a phase with nothing to do is not reported. With a
// refit the first run's phases come before the refit's epochs.
struct PhaseProgress {
  std::string_view phase;
  std::int64_t done = 0;
  std::int64_t total = 0;
  std::string_view unit;
};
// Called on the training thread; must not throw.
using PhaseCallback = std::function<void(const PhaseProgress&)>;

struct Resources {
  int threads = 0;  // torch intra-op threads for the job; 0 = leave as is
  // Where the model trains (trainer/device.h): kAuto = CUDA when LibTorch
  // has it and a GPU is visible, else the CPU; kCuda without a usable GPU is
  // kFailedPrecondition. On a GPU the splits' tokens are copied there once
  // (L · 128 bytes a program: 0.7 GB for the default 120k programs at L = 53);
  // the checkpoint and the Fisher come back as CPU bytes either way.
  Device device = Device::kAuto;
  // Seconds for the whole call: training stops at the first step past it
  // (checked every step; the final evaluation still runs). 0 = none. The
  // default keeps a daemon job within about ten minutes on a 2-core box.
  double time_budget_s = 600;
  bool eval_each_epoch = true;  // val_top1 for the progress callback (NaN when false)
  // Polled every step; true = cancel (kCancelled). Not owned; may be null.
  const std::atomic<bool>* cancel = nullptr;
  // The phases after the epochs (PhaseProgress above); empty = not told.
  PhaseCallback phase = {};
};

// Diagonal Fisher information of the trained model (TrainResult::fisher),
// for the EWC penalty of the next distillation: squared gradients of the
// ranking loss over up to `batches` training batches (trainer/fisher.h).
struct FisherOptions {
  bool compute = true;
  int batches = 64;
};

// --- what the training starts from: exactly one of -----------------------------
// A new model of TrainRequest::model.
struct FreshModel {};

// FineTune::auto_schedule's floors (see there).
struct LongSchedule {
  double validation_fraction = 0.2;  // inside each task (ValidationSplit::kPrograms)
  std::int64_t min_steps = 200;
  int patience = 20;
};

// Fine-tuning (DESIGN §5 "Progress": the active column): training starts
// from these checkpoint bytes (CostModel::save(), e.g. the production
// version's weights) instead of a fresh model, and their config wins over
// TrainRequest::model. The data must fit it (same token and descriptor
// widths, sequences within its max_len): kInvalidArgument otherwise;
// kDataLoss when the bytes are not a checkpoint. Not owned.
struct FineTune {
  std::string_view init_checkpoint{};
  // Schedule from the data: before any step, init_checkpoint scores the
  // training programs (zero_shot_fit). If it orders their pairs (same task)
  // better than a coin, pairwise accuracy > 0.5, the platform is near the
  // lineage and the request runs as set. If not, the checkpoint's order is
  // no better than chance on this platform and `long_schedule` applies,
  // each value a floor on the request's own. Measured after an x86-24c
  // base: x86-16c is near (pairwise 0.53–0.58; a few epochs, more over-fit)
  // and gpu-2080ti far (0.43–0.46; hundreds of steps) (docs/benchmarks.md,
  // onboarding). Pairwise accuracy, not top-1: over thousands of pairs it is
  // steadier than the best of a dozen tasks. TrainResult::zero_shot and
  // long_schedule_used tell what was seen and chosen.
  bool auto_schedule = false;
  using LongSchedule = trainer::LongSchedule;
  LongSchedule long_schedule{};
  // rank > 0: only a low-rank adapter on init_checkpoint trains, every other
  // weight stays the checkpoint's; the result is folded into a plain model
  // (trainer/adapter.h). A Mamba init only. The per-platform adapter of
  // docs/continual.md (bench_train --adapter-rank; a distill job's adapter,
  // with "method": "adapter" or best-of's default choice, kDistillAdapter).
  AdapterOptions adapter{};
};

// Joint training (DESIGN §10's multi-task upper bound): a new model of
// TrainRequest::model, trained on more platforms in the same run, each with
// its own records and descriptor and the same data options; every batch
// comes from one platform, batches of all platforms are shuffled together.
// Metrics, eval scores and the Fisher are the primary platform's
// (TrainRequest::data).
struct JointTraining {
  struct PlatformRecords {
    std::span<const core::Record> records{};
    Platform platform{};
  };
  std::vector<PlatformRecords> platforms{};
};

// What the student is distilled towards while it learns platform k (the
// records of TrainRequest), starting from the teacher T (Distill; or from
// the column C: DistillLevers::student_from_column):
//   loss = label_weight  · LambdaRank(S(x, h_k), labels)
//        + column_weight · KD(S(x, h_k), C(x, h_k))        the active column
//        + old_weight    · Σ_j KD(S(x, h_j), T(x, h_j))    every old platform j
//        + ewc_weight    · Σ_i F_i (θ_i − θ_T,i)²          EWC, F = T's Fisher
// KD is ranking-aware: per task group, KL(softmax(target/τ) ‖ softmax(S/τ))
// (trainer/distill_loss.h). Targets are computed once, by the frozen models:
// no old platform's measurement takes part (DESIGN §5.3); the old
// platforms' programs may (old_bank below), without their measurements.
//
// `unlabeled` adds platform k's unmeasured pool as inputs of the two KD
// terms (DESIGN §5.2): each epoch also takes batches of those programs
// (unlabeled_ratio × the measured batches, a fresh seeded share each epoch),
// whose loss is the KD terms and EWC only (so the epoch loss mixes both
// kinds of batch). Tasks of the request's eval split are left out of it; it
// is ignored when no KD term has a weight. The measured training programs
// should not be in it (the caller's contract: they would count twice).
struct DistillTargets {
  std::string_view column_checkpoint{};  // C, fine-tuned on platform k; empty = none (column_weight unused)
  std::vector<std::vector<float>> old_descriptors{};  // h_j, core::kHardwareDim floats each
  // Per old platform (old_descriptors' order), the checkpoint (plain bytes)
  // whose scores under h_j are its KD target instead of the teacher's: the
  // model that serves platform j in a version that keeps per-platform models
  // (a best-of distill, onboarding/best_of.h), so that the student learns
  // from every platform's best model. Empty, or an empty entry = the
  // teacher T. Not owned; read during the call. EWC's anchor stays T.
  std::vector<std::string_view> old_teachers{};
  std::string_view teacher_fisher{};          // TrainResult::fisher of T; empty = no EWC
  std::span<const core::Record> unlabeled{};  // platform k's unmeasured programs; read during the call
  double unlabeled_ratio = 1.0;               // unlabeled batches per measured batch, per epoch
  // The old platforms' bank: programs of their tasks (no measurement is
  // read) as inputs of the old-platform KD terms only, so that the teacher's
  // order on the old platforms' own programs is kept, not only on platform
  // k's. Empty, old_bank_ratio 0 or max_old_bank 0 = none. Read during the call.
  std::span<const core::Record> old_bank{};
  double old_bank_ratio = 1.0;         // bank batches per measured batch, per epoch (docs/continual.md)
  std::int64_t max_old_bank = 50'000;  // programs kept (a seeded share of every task, at least 2 each)
  // About this many programs of `unlabeled` kept (the same seeded share of
  // every task, at least 2 each); 0 = none. Their tokens take L · 200 bytes
  // each: 50k GPU programs (L = 68) hold 680 MB during the call.
  std::int64_t max_unlabeled = 50'000;
  double label_weight = 1.0;
  // The column term's weight as given. A distill job's option is per old
  // platform: onboarding::column_term_weight() turns it into this.
  double column_weight = 1.0;
  double old_weight = 2.0;  // each old platform's KD term (docs/continual.md)
  double ewc_weight = 0.2;
  double temperature = 1.0;
};

// Settings of a distillation that no job sets: the benches' levers
// (bench/lib/distill_levers.h reads them from flags; docs/continual.md
// tells what each measured). The defaults leave the distillation as
// DistillTargets alone makes it.
struct DistillLevers {
  // Each old platform's KD weight on platform k's own programs (measured and
  // unmeasured) as a factor of old_weight, in old_descriptors order; empty =
  // 1 each. The bank's inputs always weigh old_weight. 0 leaves an old
  // platform's KD to its own programs (the bank). Each >= 0.
  std::vector<double> old_weight_on_new_programs{};
  // Where the student's weights start: the teacher T's (false), or the
  // column's (true; needs column_checkpoint, a fine-tune of T with T's
  // config): then the student begins as platform k's best ranker and the
  // old-platform terms pull it back towards T's order. EWC's anchor is T's
  // weights either way, and auto_schedule's zero-shot fit still judges T.
  bool student_from_column = false;
  // Feature KD on the old platforms' bank: feature_weight · FD(E_S(x, h_j),
  // E_T(x, h_j)) beside each old platform's listwise KD there, E = the
  // embedding after FiLM (ScoreModel::embed), FD = distill_loss.h's relative
  // squared distance. It holds the shared representation the old scores
  // are read from, not only their order. 0 = none; unused where no bank is
  // (see DistillTargets::old_bank).
  double feature_weight = 0.0;
  // The teacher's share when the trained student is mixed back with it in
  // weight space: the result is (1 - teacher_mix) · S + teacher_mix · T,
  // parameter by parameter (WiSE-FT's interpolation, Wortsman et al. 2022,
  // with T as the init). The mix is with T also when the student started
  // from the column. 0 = the student as trained; in [0, 1]. The eval
  // metrics, eval scores and the Fisher are the mix's; the per-epoch
  // validation and the best epoch are the student's as it trained.
  double teacher_mix = 0.0;
};

// The epochs of a distill (the job's defaults, bench_train's and
// bench_continual's): the active column's fine-tune, then the student
// (docs/continual.md).
inline constexpr int kDistillColumnEpochs = 12;
inline constexpr int kDistillStudentEpochs = 12;

// The student's AdamW peak learning rate in a distill (the job's default,
// its option learning_rate; the column fine-tunes at Optimisation's 2e-3
// whatever this is, onboarding::column_request; docs/continual.md).
inline constexpr double kDistillStudentLearningRate = 2e-3;

// A distill job's adapter ("method": "adapter", and best-of's default choice; trainer/
// adapter.h): rank 4 on every Dense layer (8,860 parameters a platform for
// the default student), learning rate 0.01, 24 epochs (docs/continual.md,
// "The per-platform adapter").
inline constexpr AdapterOptions kDistillAdapter{.rank = 4, .layers = AdapterLayers::kAll};
inline constexpr int kDistillAdapterEpochs = 24;
inline constexpr double kDistillAdapterLearningRate = 0.01;

// Continual distillation (DESIGN §5 "Compress"): a fine-tune of the teacher
// T (teacher.init_checkpoint; auto_schedule as for any fine-tune) distilled
// towards `targets`, with the benches' `levers` (none by default). Needs
// the steps encoding (kInvalidArgument otherwise).
struct Distill {
  FineTune teacher{};
  DistillTargets targets{};
  DistillLevers levers{};
};

using TrainStart = std::variant<FreshModel, FineTune, JointTraining, Distill>;

struct TrainRequest {
  TrainData data{};
  // kind and sizes. token_dim, descriptor_dim and (for TLP-encoded data)
  // max_len are overwritten from the data; seed is overwritten by
  // optimisation.seed; a FineTune's or Distill's checkpoint config wins.
  ModelConfig model{};
  Optimisation optimisation{};
  Resources resources{};
  FisherOptions fisher{};
  TrainStart start = FreshModel{};

  // The platform's standing split and caps (TrainData::default_options()).
  static DatasetOptions default_data_options() { return TrainData::default_options(); }
};

// Fresh training on a dataset built beforehand (benchmarks train several
// models on one): no refit, fine-tune or distillation (they need records).
// Not owned, must outlive the call. Its encoding decides token_dim and max_len.
struct DatasetTrainRequest {
  const Dataset* dataset = nullptr;
  ModelConfig model{};
  Optimisation optimisation{};
  Resources resources{};
  FisherOptions fisher{};
};

struct TrainResult {
  std::string checkpoint;  // CostModel::save() bytes (config + fp32 weights)
  // Diagonal Fisher (float32 per parameter, in the checkpoint's parameter
  // order, scaled to mean 1); empty unless FisherOptions::compute.
  std::string fisher;
  ModelConfig config;                              // as trained (shapes from the data, seed)
  TokenEncoding encoding = TokenEncoding::kSteps;  // what the model must be fed
  RankingMetrics metrics;                          // on the eval split (all zero when it is empty)
  std::vector<float> eval_scores;                  // the model's score of each eval program, in split order
  DatasetSummary data;                             // what the data held and kept
  std::int64_t unlabeled_programs = 0;             // distill: unmeasured programs kept as KD inputs
  std::int64_t old_bank_programs = 0;              // distill: old platforms' programs kept as KD inputs
  std::int64_t num_parameters = 0;
  std::int64_t adapter_parameters = 0;  // FineTune::adapter's, trained (the rest frozen); 0 = none
  // FineTune::adapter's trained tensors alone (trainer/adapter.h save_adapter;
  // attach_adapter keeps them with a version); empty without an adapter.
  // `checkpoint` is the init with them folded in.
  std::string adapter;
  Device device = Device::kCpu;  // where it trained: kCpu or kCuda

  int epochs_planned = 0;  // epochs, or more under min_steps
  int epochs_done = 0;     // whole epochs finished (the refit's, after a refit)
  bool refitted = false;   // the result is the refit (TrainData::refit)
  // FineTune::auto_schedule: init_checkpoint on the training programs before any step
  // (random_top1 is the chance floor it was held against), and whether the
  // long schedule was applied.
  RankingMetrics zero_shot;
  bool long_schedule_used = false;
  // With a validation split: per finished epoch, its metrics; the epoch
  // whose weights were returned (1-based; 0 = none finished) and its metrics.
  std::vector<RankingMetrics> epoch_validation;
  int best_epoch = 0;
  RankingMetrics validation;
  std::int64_t steps = 0;            // optimizer steps taken
  std::vector<double> epoch_losses;  // mean training loss per finished epoch
  bool budget_exhausted = false;     // the time budget stopped training early

  double wall_s = 0;     // the whole call
  double dataset_s = 0;  // building the dataset (0 for a prebuilt one)
  double train_s = 0;    // optimizer steps (incl. per-epoch evaluation)
  double eval_s = 0;     // the final evaluation
  double fisher_s = 0;   // the Fisher information
};

// Top-1/top-5 of a checkpoint on the records of one platform whose tasks
// fall in the evaluation split `data` names (eval_fraction, split_salt;
// the platform's standing split is TrainRequest::default_data_options()),
// at most data.max_eval_records of them, scored on the CPU.
// kFailedPrecondition when no record's task is in the split.
Result<RankingMetrics> evaluate_checkpoint(std::string_view checkpoint, std::span<const core::Record> records,
                                           const Platform& platform, const DatasetOptions& data, int threads = 0);

// Several checkpoints on the same programs, for a paired comparison (the
// promotion gate's, onboarding/distill.h): every measured record of
// `records` is scored (no split and no cap: the caller picked them), in
// tasks of ≥ 2 programs, steps encoding, on the CPU — through the fast
// path (fast_inference.h) for a Mamba model. A checkpoint with a shorter
// max_len gets the same programs cut to its length. Errors: a checkpoint
// that does not load or read this data, kFailedPrecondition when no task
// has 2 measured programs.
struct ScoredPrograms {
  std::vector<std::string> task_keys;      // canonical workload keys; groups index them
  std::vector<std::int64_t> groups;        // per program
  std::vector<double> latencies;           // per program, seconds
  std::vector<std::vector<float>> scores;  // per checkpoint (in order), per program
};
Result<ScoredPrograms> score_checkpoints(std::span<const std::string_view> checkpoints,
                                         std::span<const core::Record> records, const Platform& platform,
                                         int threads = 0);
// The same with the caller's dataset options (its eval_fraction is ignored:
// every record is a candidate; max_records caps them, sampled as
// evaluate_checkpoint samples its split, and a validation_fraction moves a
// share out as it does there), so that a bench scores several
// checkpoints on the programs evaluate_checkpoint scores one on.
Result<ScoredPrograms> score_checkpoints(std::span<const std::string_view> checkpoints,
                                         std::span<const core::Record> records, const Platform& platform,
                                         const DatasetOptions& options, int threads = 0);

// How well `checkpoint` ranks the programs that `request` would train on
// (its records, platform and data options, with no validation share cut),
// before any step: what auto_schedule decides on. Scored on request.resources.device.
Result<RankingMetrics> zero_shot_fit(const TrainRequest& request, std::string_view checkpoint);

// auto_schedule's rule on zero_shot_fit's metrics: true (the long schedule)
// when the pairs are ordered no better than a coin, pairwise accuracy <= 0.5.
bool long_schedule_needed(const RankingMetrics& zero_shot);

// Called after every epoch with its 1-based number, the epochs planned
// (Optimisation::epochs, or more under min_steps), its mean training loss
// (over every batch, the unlabeled ones of a distillation included) and
// the eval split's top-1 mean ratio (mean over tasks of best / best-in-top-1;
// NaN without an eval split or when eval_each_epoch is false). Returning
// false cancels the job: train_platform then returns kCancelled.
using ProgressCallback = std::function<bool(int epoch, int epochs, double loss, double val_top1)>;

// OK: the trained model and its metrics (also when the time budget stopped
// training early: see budget_exhausted). kCancelled: the callback returned
// false or *cancel became true. kInvalidArgument: a bad request field
// (named) or a config that does not validate. kFailedPrecondition: the data
// has no trainable task (dataset.h), or device kCuda without a usable GPU.
// kInternal: torch failed (message kept; CUDA out of memory among them).
Result<TrainResult> train_platform(const TrainRequest& request, const ProgressCallback& progress = {});

// The same on a prebuilt dataset (kInvalidArgument when it is null).
Result<TrainResult> train_platform(const DatasetTrainRequest& request, const ProgressCallback& progress = {});

}  // namespace tcl::trainer
