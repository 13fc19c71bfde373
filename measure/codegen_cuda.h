// measure/codegen_cuda.h — CUDA C++ source of one program (a workload under
// a GPU schedule, schedule_gpu.h) and its launch configuration, for the CUDA
// backend (NVRTC, not part of this build).
//
// Each kernel has C linkage and one signature:
//   extern "C" __global__ void <symbol>(const float* in0, const float* in1, float* out);
// with the dense row-major buffers of operators.h (convolutions read the
// unpadded input; the padding is applied while fetching into shared
// memory). It is launched with launch.grid x launch.block threads; its
// shared memory is static (launch.static_shared_bytes, dynamic 0). A module
// source holds many kernels (NVRTC compiles it once) and needs no headers.
//
// The kernel follows the schedule: blockIdx.x and threadIdx.x are the fused
// level-0 and level-2 loops (the first spatial loop outermost, as TVM
// fuses), vthreads a serial loop inside each thread, accumulators in local
// memory; per step of the outer reduction tile the block fetches both input
// tiles into shared memory cooperatively (thread-strided, in runs of the
// fetch vector length) between two __syncthreads(); loops whose nest runs at
// most auto_unroll_max_step iterations get `#pragma unroll`.
//
// The source uses only blockIdx.x, threadIdx.x, __shared__, __syncthreads,
// __global__, __launch_bounds__ and __restrict__, so a C++ test can run it
// with those defined (one std::thread per CUDA thread, a std::barrier).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "measure/operators.h"
#include "measure/schedule_gpu.h"

namespace tcl::measure {

struct CudaLaunch {
  std::int64_t grid[3] = {1, 1, 1};
  std::int64_t block[3] = {1, 1, 1};
  std::int64_t dynamic_shared_bytes = 0;
  std::int64_t static_shared_bytes = 0;  // declared in the kernel (both input tiles)
};

struct CudaKernel {
  std::string symbol;
  std::string source;  // the kernel's definition
  CudaLaunch launch;
};

// Precondition: validate_gpu(w, s, ...) is OK.
CudaKernel generate_cuda_kernel(const Workload& w, const GpuSchedule& s, std::string_view symbol);

// The kernel's launch configuration alone (generate_cuda_kernel's .launch,
// without writing the source): what a runner needs for a built module.
CudaLaunch cuda_launch(const Workload& w, const GpuSchedule& s);

// One translation unit holding every kernel, in order (symbols distinct).
std::string cuda_module_source(std::span<const CudaKernel> kernels);

}  // namespace tcl::measure
