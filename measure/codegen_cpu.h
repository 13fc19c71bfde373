// measure/codegen_cpu.h — C++ source of one program (a workload under a
// schedule) for the CPU backend.
//
// The source defines one function with C linkage:
//   void <symbol>(const float* in0, const float* in1, float* out, float* ws);
// in1 is unused by softmax; `ws` holds workspace_size() floats of scratch.
// Buffers are dense row-major in the layouts of operators.h. Parallel loops
// are OpenMP `parallel for`, vectorized loops `omp simd`, unrolled loops
// `GCC unroll`: the module must be built with -fopenmp and -fno-tree-vectorize
// so that only the schedule decides what is vectorized (as TVM's codegen does).
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>

#include "measure/operators.h"
#include "measure/schedule.h"

namespace tcl::measure {

// Precondition: validate(w, s) is OK.
std::string generate_cpu_source(const Workload& w, const Schedule& s, std::string_view symbol);

}  // namespace tcl::measure
