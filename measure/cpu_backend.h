// measure/cpu_backend.h — the CPU backend: C++ from codegen_cpu.h, many
// programs per translation unit, built with the system compiler
// (`c++ -O3 -march=native -fopenmp -fno-tree-vectorize -shared -fPIC`),
// loaded with dlopen, checked against reference.h, timed with steady_clock.
//
// Thread-safety: const methods, safe to share; see backend.h for Session.
#pragma once

#include <string>
#include <vector>

#include "measure/backend.h"

namespace tcl::measure {

struct CpuBackendOptions {
  std::string compiler = "c++";  // found on PATH
  // Why -fno-tree-vectorize: only loops the schedule vectorizes (omp simd)
  // are vectorized, as in TVM's codegen; otherwise -O3 would vectorize every
  // schedule alike and hide what AN vectorize does.
  std::vector<std::string> flags = {"-O3",     "-march=native", "-fopenmp", "-fno-tree-vectorize",
                                    "-shared", "-fPIC",         "-w"};
  double build_timeout_seconds = 120;
  int num_threads = 0;  // OpenMP threads of the measured programs; 0 = all online CPUs
};

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(CpuBackendOptions options = {});
  std::string_view name() const override { return "cpu"; }
  bool accepts(const Program& program) const override { return !program.is_gpu(); }
  std::string codegen(const Program& program, std::string_view symbol) const override;
  BuildResult build(std::span<const std::string> sources, const std::string& path_stem) const override;
  std::unique_ptr<Session> open(const std::string& module_path, std::string* error) const override;

 private:
  CpuBackendOptions options_;
};

}  // namespace tcl::measure
