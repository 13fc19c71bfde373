// measure/cuda_backend.h — the CUDA backend: CUDA C++ from codegen_cuda.h,
// many kernels per module compiled by NVRTC to a cubin, loaded with the
// driver API in the runner's child, checked against reference.h, timed with
// CUDA events. Built only where CMake finds the CUDA toolkit (TCL_HAVE_CUDA);
// nothing else in this project needs CUDA.
//
// Fork safety: this process never initializes CUDA. NVRTC runs in a forked
// child per build (a crash or a hang of the compiler is error_no 3 or 6),
// the device is opened in the runner's children only, and the device query
// runs in a child of its own, so the caller can go on forking.
//
// Failures, as TVM's MeasureErrorNO: a compile error or a crash of NVRTC 3
// (the measurer bisects the unit), any other failure of the build child 8;
// a kernel that cannot launch (too many registers for its block)
// 4; an illegal address or any other error of a running kernel 4, after
// which the session reports usable() false and the runner goes on in a
// fresh child (a CUDA context is spoilt by such an error); a wrong answer 5;
// a hang 7 (the runner kills the child).
//
// Timing (as TVM's time_evaluator): after the verified launch, `number`
// back-to-back launches between two CUDA events, `number` grown (at least
// 1.618x) until they last TimingOptions::min_repeat_seconds; then `repeat`
// such runs; cost = elapsed / number.
// Inputs stay in device memory (L2-warm, as TVM's runner leaves them).
//
// Thread-safety: const methods, safe to share (build forks); see backend.h.
#pragma once

#include <string>

#include "core/status.h"
#include "measure/backend.h"
#include "measure/hardware.h"

namespace tcl::measure {

struct CudaBackendOptions {
  int device = 0;              // CUDA device ordinal
  std::string arch = "sm_90";  // NVRTC's --gpu-architecture (query_cuda_device(...).arch)
  double build_timeout_seconds = 300;
};

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(CudaBackendOptions options = {});
  std::string_view name() const override { return "cuda"; }
  bool accepts(const Program& program) const override { return program.is_gpu(); }
  std::string codegen(const Program& program, std::string_view symbol) const override;
  BuildResult build(std::span<const std::string> sources, const std::string& path_stem) const override;
  std::unique_ptr<Session> open(const std::string& module_path, std::string* error) const override;

 private:
  CudaBackendOptions options_;
};

// The device's facts (name, compute capability, SMs, limits), read in a
// forked child. kUnavailable when there is no driver or no such device.
Result<GpuFacts> query_cuda_device(int device = 0);

}  // namespace tcl::measure
