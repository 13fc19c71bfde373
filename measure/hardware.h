// measure/hardware.h — the descriptor of the machine tcl-measure runs on, as
// TVM would write it in a record's task (target string + hardware_params).
//
// Thread-safety: pure function (reads /proc/cpuinfo and sysconf).
#pragma once

#include <string>

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
};

HardwareInfo local_hardware();

}  // namespace tcl::measure
