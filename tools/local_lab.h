// tools/local_lab.h — this machine as tclctl onboard's lab: the hardware
// descriptor it registers, the candidate pool it generates, and measuring
// picked records in-process through measure/ (tcl-measure's library). A thin
// adapter: the programs, code generation and timing belong to measure/.
//
// Thread-safety: LocalLab is not thread-safe (one round at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace tcl::tools {

struct LocalHardware {
  std::string target;                      // TVM target string, e.g. "llvm -keys=cpu -mcpu=..."
  std::vector<long long> hardware_params;  // TVM HardwareParams, 8 values
  std::string description;                 // "16 cores, AVX2, 64-byte lines"
};
LocalHardware local_hardware();

// Writes the unmeasured candidates for `models` (resnet50, mobilenet_v2,
// bert), `per_task` schedules per operator, to `path` as JSON lines; the
// same arguments always give the same file. The number of programs, or why
// it could not (unknown model, unwritable path).
Result<std::size_t> write_candidates(const std::vector<std::string>& models, int per_task, std::uint64_t seed,
                                     const std::string& path);

struct LocalLabOptions {
  int repeats = 0;  // timed repeats per program; 0 = measure/'s default
};

class LocalLab {
 public:
  explicit LocalLab(LocalLabOptions options);
  ~LocalLab();
  // Measures every record line of `to_measure` on this machine and appends
  // one measured record line per program to `out` (a failed measurement is a
  // record with its error_no: it is an answer too). Lines that are not
  // programs measure/ can build (another generator's records) count in
  // `unanswered`. An error only when measuring could not run at all.
  Status measure(const std::vector<std::string>& to_measure, std::string* out, std::size_t* unanswered);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tcl::tools
