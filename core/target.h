// core/target.h — what a TVM target string says about the hardware, e.g.
//   "llvm -keys=cpu -mcpu=core-avx2 -num-cores=24"
//   "cuda -keys=cuda,gpu -arch=sm_75 -max_num_threads=1024 -thread_warp_size=32"
// Used by the hardware descriptor (features.h). Unknown options are ignored;
// parsing never fails (an empty or odd string gives an empty TargetInfo).
//
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tcl::core {

struct TargetInfo {
  std::string kind;                // first word: "llvm", "cuda", "rocm", ...
  std::vector<std::string> keys;   // -keys=a,b (plus -device), else the kind's defaults
  std::string device;              // -device=arm_cpu
  std::string mcpu;                // -mcpu=core-avx2
  std::string mtriple;             // -mtriple=x86_64-linux-gnu
  std::string arch;                // -arch=sm_75
  std::string model;               // -model=2080ti
  std::vector<std::string> mattr;  // -mattr=+avx2,+fma -> {"+avx2", "+fma"}
  std::int64_t num_cores = 0;      // -num-cores / -num_cores; 0 = not given
  std::int64_t max_num_threads = 0;
  std::int64_t thread_warp_size = 0;
  std::int64_t max_shared_memory_per_block = 0;

  bool has_key(std::string_view key) const;
  // sm_75 -> 75; 0 when -arch is absent or not "sm_<n>".
  int cuda_sm() const;
};

TargetInfo parse_target(std::string_view target);

}  // namespace tcl::core
