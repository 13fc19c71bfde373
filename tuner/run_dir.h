// tuner/run_dir.h — a tuning run's folder: what it holds and how it is
// written so that a killed run loses at most the round under way.
//
//   run.json            the settings that make two runs the same run
//                       (network, tasks, target, model, scheduler, seed, pick,
//                       programs per round); checked when a run resumes
//   measurements.jsonl  every measured record, round after round (TVM
//                       records; appended and fsynced before the round's row)
//   rounds.csv          one row per complete round: the curve (columns in
//                       kRoundsHeader); a round counts once its row is there
//   best.jsonl          the fastest valid program of each task, as TVM
//                       records: a log TVM's ApplyHistoryBest reads
//   curve.svg           network latency against measurements
//   curve-time.svg      network latency against wall seconds
//   uploaded            how many rounds the lineage has accepted
//   .lock               held (flock) while a run uses the folder
//
// Thread-safety: a RunDir is used by one thread.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/record.h"
#include "core/status.h"

namespace tcl::tuner {

inline constexpr std::string_view kRoundsHeader =
    "round,task,task_name,measured,valid,network_seconds,task_best_seconds,wall_seconds,search_seconds,"
    "learn_seconds,measure_seconds,upload_seconds";

struct RoundRow {
  int round = 0;
  std::size_t task = 0;
  std::string task_name;  // measure::Workload as kind_arg1xarg2x... (no commas)
  int measured = 0;       // measurements so far, this round's included
  int valid = 0;
  double network_seconds = 0;  // NaN: not every task has a valid program yet
  double task_best_seconds = 0;
  double wall_seconds = 0, search_seconds = 0, learn_seconds = 0, measure_seconds = 0, upload_seconds = 0;
};

class RunDir {
 public:
  // Opens (creating) `dir` and locks it; `settings` is run.json's text: a
  // folder that holds other settings is kFailedPrecondition naming the first
  // difference, one locked by another run kUnavailable.
  static Result<std::unique_ptr<RunDir>> open(const std::string& dir, std::string_view settings);
  ~RunDir();

  // The complete rounds and their records, in order (records beyond the last
  // complete round are cut off the log). kDataLoss when the files disagree.
  Result<std::vector<RoundRow>> read(std::vector<core::Record>* records);
  // Appends one round: its records, then its row.
  Status append(const RoundRow& row, std::span<const core::Record> records);
  Status write_best(std::span<const core::Record> best);
  Status write_curve_svg(std::string_view title);
  int uploaded_rounds() const { return uploaded_; }
  Status set_uploaded_rounds(int rounds);

  const std::string& path() const { return dir_; }

 private:
  RunDir(std::string dir, int lock_fd);
  std::string dir_;
  int lock_fd_ = -1;
  int uploaded_ = 0;
  std::vector<RoundRow> rows_;  // for the SVG
};

// The SVG of one or more curves (x: `x_label`'s quantity, y: network latency in ms).
struct CurveSeries {
  std::string name;
  std::vector<double> x, y;
};
std::string curve_svg(std::span<const CurveSeries> series, std::string_view title, std::string_view x_label);

}  // namespace tcl::tuner
