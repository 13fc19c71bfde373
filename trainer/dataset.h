// trainer/dataset.h — the training set of ONE platform, built from parsed
// records (DESIGN §2, §3, §10). Torch-free: plain buffers that the training
// job (trainer/train_job.h) turns into tensors, and that tests, the API and
// the benchmarks can read.
//
// Data flow:
//   records ─ classify ─ measured ─ label y = min_cost(task) / mean(costs)
//           ─ group by canonical workload key (one group = one task)
//           ─ split by whole tasks: core::in_holdout(key, eval_fraction, salt)
//           ─ cap: max_records (train) / max_eval_records (eval), seeded
//           ─ validation: a seeded share of each training task's programs
//           ─ encode: tokens [n, L, token_dim], lengths [n]; one descriptor
// Failed measurements and unmeasured candidates never get a label and are
// left out; tasks with fewer than 2 measured programs carry no ranking signal
// and are left out too (both counted in DatasetSummary). Labels are computed
// from ALL measured records of a task before any cap, so a sampled program's
// label still compares it with the task's true best.
//
// Group ids are dense indices into Dataset::task_keys (canonical workload
// keys, sorted), shared by both splits; programs of one task are contiguous
// within a split, in input order.
//
// Thread-safety: pure function; the returned values are plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/features.h"
#include "core/platform.h"
#include "core/record.h"
#include "core/status.h"

namespace tcl::trainer {

// How steps become tokens. Stored by name next to trained models; names never change.
enum class TokenEncoding : std::uint8_t {
  kSteps,  // core::encode_tokens: kTokenDim floats per step (the student's encoding)
  kTlp,    // core::encode_tlp: TLP's step-kind one-hot + raw arguments (baselines);
           // kTlpGpu for targets with the "gpu" key, else kTlpCpu
  // core::encode_workload's token, then the steps' tokens (at most max_len - 1
  // of them). Benchmarks only (bench_quality
  // "mamba:workload"): the daemon's jobs, predict and distillation encode kSteps.
  kStepsWorkload,
};
std::string_view token_encoding_name(TokenEncoding encoding);  // "steps", "tlp", "workload"
std::optional<TokenEncoding> parse_token_encoding(std::string_view name);

// How DatasetOptions::validation_fraction cuts the validation split out of
// the training tasks.
enum class ValidationSplit : std::uint8_t {
  kPrograms,  // a seeded share inside every task: watches over-fitting to programs
  kTasks,     // whole tasks (core::in_holdout, salted by sample_seed): watches
              // over-fitting to the training tasks, as the eval split would
};

// How max_records / max_eval_records pick what stays.
enum class RecordSampling : std::uint8_t {
  kRecords,  // every task keeps the same share of its programs (at least 2), seeded
  kTasks,    // whole tasks in a seeded order, while they fit under the cap
};

// The platform every record belongs to (the caller's contract: ONE platform).
using Platform = core::Platform;

struct DatasetOptions {
  TokenEncoding encoding = TokenEncoding::kSteps;
  // kSteps: L = min(longest kept sequence, max_len); longer sequences keep
  // their first max_len steps. kStepsWorkload: L = min(longest + 1, max_len),
  // the first max_len - 1 steps (max_len >= 2). kTlp: L = the TLP config's
  // seq_len (ignored here).
  int max_len = core::kDefaultMaxSteps;
  // Share of tasks held out for evaluation (core::in_holdout), in [0, 1).
  // 0 = no eval split. split_salt picks another independent split (salt 0 is
  // the platform's standing evaluation split).
  double eval_fraction = 0.0;
  std::uint64_t split_salt = 0;
  // Caps on the number of programs kept in each split; 0 = keep all. Training
  // on the whole x86-24c set (~520k programs) takes 5.5 GB of tokens at L = 53;
  // the training job's defaults cap it (train_job.h).
  std::int64_t max_records = 0;       // train split
  std::int64_t max_eval_records = 0;  // eval split
  RecordSampling sampling = RecordSampling::kRecords;
  std::uint64_t sample_seed = 0;
  // Share of the training split moved to the validation split (after the
  // cap, seeded by sample_seed), in [0, 1); 0 = none.
  // kPrograms: a task gives max(2, round(n · share)) programs when at least
  // 2 stay in training, none otherwise.
  // kTasks: about that share of the training tasks, whole; none when the
  // draw would take every task or none.
  double validation_fraction = 0.0;
  ValidationSplit validation_split = ValidationSplit::kPrograms;
  // Appended to the platform's descriptor (core::kHardwareDim floats), so the
  // model reads kHardwareDim + size() (bench_continual --platform-slots: a
  // one-hot per platform, the cheapest per-platform adapter;
  // docs/continual.md). The jobs, the API and predict leave it empty.
  std::vector<float> descriptor_extra;
};

// What went in and what was kept.
struct DatasetSummary {
  std::int64_t records = 0;                         // records given
  std::int64_t measured = 0;                        // core::classify == kMeasured
  std::int64_t failed = 0;                          // error_no != 0 or a cost <= 0: never labelled
  std::int64_t candidates = 0;                      // unmeasured: never labelled
  std::int64_t tasks = 0;                           // tasks with >= 2 measured programs (kept)
  std::int64_t tasks_dropped = 0;                   // tasks with measurements but < 2 of them
  std::int64_t train_tasks = 0, train_records = 0;  // after the caps
  std::int64_t eval_tasks = 0, eval_records = 0;
  std::int64_t validation_tasks = 0, validation_records = 0;
  std::int64_t capped_records = 0;  // measured programs of kept tasks left out by a cap
};

// One split: `count` programs in whole tasks.
struct DatasetSplit {
  std::int64_t count = 0;
  std::vector<float> tokens;          // [count, seq_len, token_dim], zero-padded
  std::vector<std::int32_t> lengths;  // [count], each in [0, seq_len]
  std::vector<float> labels;          // [count], in (0, 1]
  std::vector<double> latencies;      // [count], mean cost in seconds (> 0)
  std::vector<std::int64_t> groups;   // [count], index into Dataset::task_keys
  std::int64_t tasks = 0;             // distinct groups
};

struct Dataset {
  TokenEncoding encoding = TokenEncoding::kSteps;
  std::int64_t seq_len = 0;            // L of both splits
  std::int64_t token_dim = 0;          // kTokenDim, or the TLP emb_size
  std::vector<float> descriptor;       // [core::kHardwareDim + descriptor_extra], the platform's
  std::vector<std::string> task_keys;  // canonical workload keys, sorted
  DatasetSplit train, eval;
  DatasetSplit validation;  // programs of training tasks held out of training
  DatasetSummary summary;
};

// Builds both splits. OK: train holds at least one task with 2 programs.
// kInvalidArgument: a bad option (named). kFailedPrecondition: no task with
// two measured programs, or every such task fell in the eval split.
// `records` is only read during the call.
Result<Dataset> build_dataset(std::span<const core::Record> records, const Platform& platform,
                              const DatasetOptions& options);

// Programs without labels: distillation inputs (DESIGN §5 "Compress" trains
// on the new platform's unmeasured pool as well as its measurements). Every
// record of `records` counts, whatever its class; they are grouped by task
// (ids in sorted key order, as build_dataset) into `train`, with labels and
// latencies 0 (never read); tasks with a single program are left out (a
// ranking needs two), and so are the tasks of the eval split that
// `options` names (eval_fraction, split_salt: they never give a gradient).
// About options.max_records programs (0 = all): the same seeded share
// (sample_seed) of every task, at least 2 each. Steps encoding,
// L = min(longest, max_len).
// kFailedPrecondition when no task is left.
Result<Dataset> build_unlabeled_dataset(std::span<const core::Record> records, const Platform& platform,
                                        const DatasetOptions& options);

// The platform of the first record that carries a target (target string and
// hardware params); kNotFound when none does. For callers holding a file of
// one platform's records (benchmarks, tools).
Result<Platform> platform_of(std::span<const core::Record> records);

}  // namespace tcl::trainer
