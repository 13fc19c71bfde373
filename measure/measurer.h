// measure/measurer.h — measures records on this machine: the library entry
// point of tcl-measure (and of `tclctl onboard --measure-local`).
//
//   records --decode (workload key, steps)--> Program --Backend::codegen-->
//   units of `programs_per_unit` sources --Backend::build--> module
//   --run_isolated (runner.h)--> costs or error_no --> records with "r" set
//
// Every unit is built first (`build_jobs` at a time), then the modules run
// one after the other, so that nothing compiles while a program is timed.
// A record that does not decode, or that the backend does not measure (a
// cuda record on the CPU backend), gets error_no 1 (instantiation); a unit
// that does not compile is bisected so that only the guilty programs get
// error_no 2 (host) or 3 (device); failures carry costs [1e10] as TVM
// writes them.
// The task part of every record (target, hardware params) is kept as given.
//
// Thread-safety: a Measurer is not thread-safe; use one per thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/record.h"
#include "measure/backend.h"
#include "measure/runner.h"

namespace tcl::measure {

struct MeasureOptions {
  // Programs compiled into one translation unit: compilation dominates, and
  // one compiler start per unit amortizes it.
  int programs_per_unit = 32;
  // Units compiled at once; 0 = one per online CPU. Backend::build must be
  // safe to call from several threads (both backends are).
  int build_jobs = 0;
  RunnerOptions runner;  // per-program timeout and timing (repeat, min_repeat, budget)
  // Where sources and modules go; empty = a fresh directory under $TMPDIR,
  // removed when measure() returns.
  std::string work_dir;
};

struct MeasureProgress {
  std::size_t done = 0;
  std::size_t total = 0;
  std::size_t failed = 0;
};
using ProgressCallback = std::function<void(const MeasureProgress&)>;

class Measurer {
 public:
  // `backend` null = the CPU backend with its defaults.
  explicit Measurer(MeasureOptions options, std::unique_ptr<Backend> backend = nullptr);
  ~Measurer();

  // Returns `records` with costs (seconds, one per repeat), error_no,
  // all_cost (seconds spent on the record: its share of the build plus its
  // run) and timestamp filled, in the same order. Never throws; the reason of
  // each failure is in last_errors() (same index; empty when it succeeded).
  std::vector<core::Record> measure(std::span<const core::Record> records, const ProgressCallback& progress = {});
  const std::vector<std::string>& last_errors() const { return errors_; }

 private:
  // Decodes every record; the ones that fail (or that the backend does not
  // measure) are finished as instantiation errors. The indices left to measure.
  std::vector<std::size_t> decode_all(std::span<const core::Record> records, std::vector<Program>* programs,
                                      const ProgressCallback& progress);
  // Runs a built module's programs (records `ids`) in the runner's children.
  void run_module(const std::vector<Program>& programs, const std::vector<std::size_t>& ids,
                  const std::string& module_path, double build_share, const ProgressCallback& progress);
  void fail(std::size_t i, std::int32_t error_no, std::string why, double seconds);
  void report(std::size_t i, const ProgressCallback& progress);

  MeasureOptions options_;
  std::unique_ptr<Backend> backend_;
  // State of the measure() call under way.
  std::vector<core::Record> out_;
  std::vector<std::string> errors_;
  MeasureProgress state_;
};

// Decodes a record into a program: its workload key and steps, read as the
// GPU sketch for a cuda target (within the limits of its hardware_params),
// as the CPU sketch otherwise. kInvalidArgument when they are not a point
// of that space.
Result<Program> decode_program(const core::Record& record);

}  // namespace tcl::measure
