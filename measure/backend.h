// measure/backend.h — what a measuring backend provides: source generation,
// building many programs into one loadable module, and running one program
// of a loaded module (verify against the reference, then time it).
//
// Data flow (as in TVM's measure.h):
//   Program --codegen--> source --build (many per module)--> module file
//     --open (in the isolated child, runner.h)--> Session --run--> RunResult
// Two implementations: the CPU backend (cpu_backend.h: the system compiler,
// dlopen, steady_clock) and, in a build that found CUDA, the CUDA backend
// (cuda_backend.h: NVRTC, the driver API, CUDA events).
//
// Thread-safety: codegen() and build() are const and called from several
// threads at once (the measurer builds units in parallel); open() runs in
// the runner's child process only, and a Session lives there.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "measure/operators.h"
#include "measure/schedule.h"
#include "measure/schedule_gpu.h"

namespace tcl::measure {

// A workload under a schedule of the CPU sketch (llvm targets) or of the GPU
// sketch (cuda targets).
struct Program {
  Workload workload;
  std::variant<Schedule, GpuSchedule> schedule;

  bool is_gpu() const { return std::holds_alternative<GpuSchedule>(schedule); }
};

// Outcome of a build: error_no is a core::MeasureError value (0, 2 compile
// host, 3 compile device, 6 build timeout); `message` says why. A compile
// error (2 or 3) blames the sources: the measurer splits the unit to find
// the guilty ones.
struct BuildResult {
  std::int32_t error_no = 0;
  std::string module_path;  // set when error_no == 0
  std::string message;
  double seconds = 0;
};

// How a program is timed (TVM's number / repeat / min_repeat_ms).
struct TimingOptions {
  int repeat = 5;                     // costs per program
  double min_repeat_seconds = 0.002;  // `number` grows until a repeat lasts this long
  double budget_seconds = 1.0;        // timing of one program stops early past this
};

// Outcome of one program: error_no 0 with `costs` (seconds per run, one per
// repeat), or 4 runtime / 5 wrong answer with `message`.
struct RunResult {
  std::int32_t error_no = 0;
  std::vector<double> costs;
  std::string message;
};

// A loaded module in the child process.
class Session {
 public:
  virtual ~Session() = default;
  virtual RunResult run(const Program& program, std::string_view symbol, const TimingOptions& timing) = 0;
  // False once a failure has spoilt the session for the programs after it (a
  // CUDA context after an illegal address): the runner then ends this child
  // and goes on in a fresh one.
  virtual bool usable() const { return true; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Whether this backend measures `program` (the CPU backend: the CPU
  // sketch; the CUDA backend: the GPU sketch).
  virtual bool accepts(const Program& program) const = 0;
  // Source of one program as a function named `symbol`.
  virtual std::string codegen(const Program& program, std::string_view symbol) const = 0;
  // Builds the sources (each from codegen(), distinct symbols) into one
  // module at `path_stem` + the backend's suffix; never throws.
  virtual BuildResult build(std::span<const std::string> sources, const std::string& path_stem) const = 0;
  // Loads a built module. Called in the runner's child process only (the
  // module may crash or hang it). nullptr and *error on failure.
  virtual std::unique_ptr<Session> open(const std::string& module_path, std::string* error) const = 0;
};

}  // namespace tcl::measure
