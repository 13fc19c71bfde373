// bench/lib/timing.h — the benches' two clocks: wall seconds since a
// steady_clock point, and the CPU seconds of the whole process (all
// threads; on a shared box the wall time depends on the neighbours, this
// much less).
#pragma once

#include <chrono>
#include <ctime>

namespace tcl::bench {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

inline double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace tcl::bench
