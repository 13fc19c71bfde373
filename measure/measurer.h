// measure/measurer.h — measures records on this machine: the library entry
// point of tcl-measure (and of `tclctl onboard --measure-local`).
//
//   records --decode (workload key, steps)--> Program --Backend::codegen-->
//   units of `programs_per_unit` sources --Backend::build--> module
//   --run_isolated (runner.h)--> costs or error_no --> records with "r" set
//
// A record that does not decode gets error_no 1 (instantiation); a unit that
// does not compile is bisected so that only the guilty programs get error_no
// 2; failures carry costs [1e10] as TVM writes them.
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
  MeasureOptions options_;
  std::unique_ptr<Backend> backend_;
  std::vector<std::string> errors_;
};

// Decodes a record into a program (its workload key and steps);
// kInvalidArgument for a cuda record (no CUDA backend in this build yet).
Result<Program> decode_program(const core::Record& record);

}  // namespace tcl::measure
