// measure/hardware.h — the descriptor of the machine tcl-measure runs on, as
// TVM would write it in a record's task (target string + hardware_params).
//
// Thread-safety: pure functions (local_hardware reads /proc/cpuinfo and sysconf).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/record.h"

namespace tcl::measure {

struct HardwareInfo {
  int num_cores = 1;            // online logical CPUs (sysconf)
  int vector_bytes = 16;        // widest SIMD register: AVX-512 64, AVX2 32, SSE/NEON 16
  int cache_line_bytes = 64;    // L1 data cache line (sysconf, else 64)
  std::string mcpu;             // LLVM's name for the CPU family, e.g. "skylake-avx512"; may be empty
  std::string target;           // "llvm -keys=cpu -mcpu=skylake-avx512 -num-cores=2"
  core::HardwareParams params;  // [cores, vector bytes, cache line, 0, 0, 0, 0, 0]

  int vector_lanes() const { return vector_bytes / 4; }  // floats per register
  bool is_cuda() const { return target.starts_with("cuda"); }
};

HardwareInfo local_hardware();

// What a CUDA device says about itself (cuda_backend.h's query_cuda_device
// reads it; the defaults are an sm_90 card's).
struct GpuFacts {
  std::string name;            // "NVIDIA H100 80GB HBM3"; may be empty
  std::string arch = "sm_90";  // compute capability as nvcc spells it
  std::int64_t sm_count = 0;   // multiprocessors; 0 = unknown
  std::int64_t max_threads_per_block = 1024;
  std::int64_t max_shared_memory_per_block = 49152;  // static shared memory, bytes
  std::int64_t max_registers_per_block = 0;          // 0 = unknown
  std::int64_t warp_size = 32;
  std::int64_t memory_bytes = 0;  // 0 = unknown
};

// The GPU as TVM describes it: target "cuda -keys=cuda,gpu -arch=<arch>
// -max_num_threads=<threads> -thread_warp_size=<warp>", hardware_params
// [-1, 16, 64, shared memory per block, 2147483647, threads per block,
// warp / 4, warp] (TVM's GetDefaultHardwareParams for CUDA). The first
// form assumes an sm card of `arch` with TVM's defaults, without a device.
HardwareInfo cuda_hardware(std::string_view arch = "sm_90");
HardwareInfo cuda_hardware(const GpuFacts& gpu);

// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 65536 registers per block, 81079 MiB)".
std::string describe(const GpuFacts& gpu);

}  // namespace tcl::measure
