#include "measure/hardware.h"

#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

namespace tcl::measure {

HardwareInfo local_hardware() {
  HardwareInfo hw;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  hw.num_cores = cores > 0 ? static_cast<int>(cores) : 1;
#ifdef _SC_LEVEL1_DCACHE_LINESIZE
  const long line = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
  if (line > 0) hw.cache_line_bytes = static_cast<int>(line);
#endif
  // The first "flags" (x86) or "Features" (arm) line names the vector units.
  std::set<std::string> flags;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string row;
  while (std::getline(cpuinfo, row)) {
    if (row.starts_with("flags") || row.starts_with("Features")) {
      std::istringstream words(row.substr(row.find(':') + 1));
      std::string f;
      while (words >> f) flags.insert(f);
      break;
    }
  }
  if (flags.count("avx512f")) {
    hw.vector_bytes = 64;
    hw.mcpu = "skylake-avx512";
  } else if (flags.count("avx2")) {
    hw.vector_bytes = 32;
    hw.mcpu = "core-avx2";
  } else {
    hw.vector_bytes = 16;  // SSE2 (x86-64 baseline) or NEON
  }
  hw.target = "llvm -keys=cpu";
  if (!hw.mcpu.empty()) hw.target += " -mcpu=" + hw.mcpu;
  hw.target += " -num-cores=" + std::to_string(hw.num_cores);
  hw.params.num_cores = hw.num_cores;
  hw.params.vector_unit_bytes = hw.vector_bytes;
  hw.params.cache_line_bytes = hw.cache_line_bytes;
  return hw;
}

HardwareInfo cuda_hardware(std::string_view arch) {
  GpuFacts facts;
  facts.arch = std::string(arch);
  return cuda_hardware(facts);
}

HardwareInfo cuda_hardware(const GpuFacts& gpu) {
  HardwareInfo hw;
  hw.num_cores = -1;
  hw.target = "cuda -keys=cuda,gpu -arch=" + gpu.arch +
              " -max_num_threads=" + std::to_string(gpu.max_threads_per_block) +
              " -thread_warp_size=" + std::to_string(gpu.warp_size);
  // As TVM's GetDefaultHardwareParams for CUDA: no core count, 16-byte
  // vectors, 64-byte lines, no local-memory bound, a vthread per 4 lanes.
  hw.params = {
      -1,           16, 64, gpu.max_shared_memory_per_block, 2147483647, gpu.max_threads_per_block, gpu.warp_size / 4,
      gpu.warp_size};
  return hw;
}

std::string describe(const GpuFacts& gpu) {
  std::string s = gpu.name.empty() ? "a CUDA GPU" : gpu.name;
  s += " (" + gpu.arch;
  if (gpu.sm_count > 0) s += ", " + std::to_string(gpu.sm_count) + " SMs";
  if (gpu.max_registers_per_block > 0) s += ", " + std::to_string(gpu.max_registers_per_block) + " registers per block";
  if (gpu.memory_bytes > 0) s += ", " + std::to_string(gpu.memory_bytes >> 20) + " MiB";
  return s + ")";
}

}  // namespace tcl::measure
