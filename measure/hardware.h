// measure/hardware.h — the descriptor of the machine tcl-measure runs on, as
// TVM would write it in a record's task (target string + hardware_params).
//
// Thread-safety: pure functions (local_hardware reads /proc/cpuinfo and sysconf).
#pragma once

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

// A CUDA GPU as TVM describes it, without asking the device (the CUDA
// backend reads the real values): target "cuda -keys=cuda,gpu -arch=<arch>
// -max_num_threads=1024 -thread_warp_size=32", hardware_params TVM's CUDA
// defaults [-1, 16, 64, 49152, 2147483647, 1024, 8, 32].
HardwareInfo cuda_hardware(std::string_view arch = "sm_90");

}  // namespace tcl::measure
