// core/hardware_order.h — HardwareParams as TVM orders them: the 8 values a
// record's "i" writes after the target, and the order platforms register
// and compare them in (core/ingest_rules.h).
//
// Thread-safety: pure function.
#pragma once

#include <array>
#include <cstdint>

#include "core/record.h"

namespace tcl::core {

inline std::array<std::int64_t, 8> tvm_order(const HardwareParams& h) {
  return {h.num_cores,
          h.vector_unit_bytes,
          h.cache_line_bytes,
          h.max_shared_memory_per_block,
          h.max_local_memory_per_block,
          h.max_threads_per_block,
          h.max_vthread_extent,
          h.warp_size};
}

}  // namespace tcl::core
