// tuner/tuner.h — tunes a network: the one home of the tuning workflow
// (`tclctl tune` and bench/tune_study call it).
//
//   loop   the scheduler (scheduler.h) picks a task; the search (search.h)
//          picks `per_round` programs of it never measured in this run,
//          scored by the cost model (cost_model.h); they are measured
//          (TuneHooks::measure, this machine by default); the round is
//          appended to the run folder and handed to TuneHooks::upload; the
//          model learns the task's measurements; until `budget` measurements.
//   folder `dir` holds the run (run_dir.h): its settings, every measured
//          record, one row per round (the curve), the best program per task
//          as TVM records, and the curve as SVG. A run started again on the
//          same folder resumes after its last complete round and repeats the
//          rounds an uninterrupted run would have made (each round's
//          generator comes from the seed and the round's index); a folder of
//          another network, target, model, scheduler or seed is refused.
//   output network latency = Σ over tasks of weight × the task's best mean
//          cost (seconds), known once every task has a valid program.
//
// Uploads: a round whose upload fails is sent again with the next one (all
// pending rounds in one call, under one idempotency key per range of
// rounds); the run never stops for the server. `TuneResult::pending_upload`
// says how many rounds it still holds back.
//
// Thread-safety: one call per run folder at a time (the folder is locked).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/record.h"
#include "core/status.h"
#include "measure/hardware.h"
#include "measure/operators.h"
#include "tuner/cost_model.h"
#include "tuner/scheduler.h"
#include "tuner/search.h"

namespace tcl::tuner {

struct TuneOptions {
  std::string network;               // a name: "resnet50", "bert", ...
  std::vector<measure::Task> tasks;  // the network's tasks and their weights
  measure::HardwareInfo hardware;    // the target and hardware params of every record
  std::string model = "lineage";     // cost_model.h's names
  SchedulerRule scheduler = SchedulerRule::kGradient;
  int budget = 1000;   // measurements in all (a resumed run may raise it)
  int per_round = 16;  // programs measured per round
  // Programs in each task's first round (the warm-up that gives every task a
  // latency); 0 = per_round, as Ansor. Smaller, the model's ranking decides
  // more of the budget: the lever for the search-time speedup, whose figure
  // cannot exceed budget ÷ (tasks × warm-up) (docs/tuning.md).
  int warmup = 0;
  std::uint64_t seed = 1;
  SearchOptions search;
  std::string dir;  // the run folder (created)
};

struct RoundReport {
  int round = 0;                 // 0-based
  std::size_t task = 0;          // index in TuneOptions::tasks
  int measured = 0;              // measurements so far, this round's included
  int valid = 0;                 // this round's programs that ran correctly
  double network_seconds = NAN;  // NaN until every task has a valid program
  double task_best_seconds = INFINITY;
  double wall_seconds = 0;     // since the run started (resumed runs continue the count)
  double search_seconds = 0;   // this round: scoring and evolution
  double learn_seconds = 0;    // this round: the model's update
  double measure_seconds = 0;  // this round: compiling and timing
  double upload_seconds = 0;   // this round: handing records to TuneHooks::upload
};

struct TuneHooks {
  // Needed by the "lineage" and "lineage+online" models.
  LineageScorer lineage;
  // Measures unmeasured records (returns them with costs, error_no set, same
  // order). Empty = measure/'s Measurer on this machine.
  std::function<std::vector<core::Record>(std::span<const core::Record>)> measure;
  // Sends measured records to the lineage; `key` is the same when the same
  // rounds are sent again. Empty = no uploads.
  std::function<Status(std::span<const core::Record> records, const std::string& key)> upload;
  // After each round (and once per round replayed from the folder, with
  // `replayed` true).
  std::function<void(const RoundReport&, bool replayed)> progress;
};

struct TuneResult {
  int rounds = 0;
  int measured = 0;
  int resumed_rounds = 0;  // rounds read back from the folder
  double network_seconds = NAN;
  std::vector<double> task_best_seconds;  // +inf for a task without a valid program
  int pending_upload = 0;                 // rounds not yet accepted by TuneHooks::upload
  std::string last_upload_error;
};

Result<TuneResult> tune(const TuneOptions& options, const TuneHooks& hooks);

// Programs in each task's first round: warmup, or per_round when it is 0.
// A run has a warm-up of its own (run.json, run_name) only where this
// differs from per_round.
int first_round_size(const TuneOptions& options);

// A run's folder name by default: NETWORK-MODEL[-pick-RULE][-warmup-N]-sSEED,
// a '+' in MODEL written '-'; the parts in brackets only when not the
// defaults. bench/tune_summary.py reads it back.
std::string run_name(const TuneOptions& options);

}  // namespace tcl::tuner
