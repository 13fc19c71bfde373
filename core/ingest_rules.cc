#include "core/ingest_rules.h"

#include <array>
#include <cmath>
#include <cstdint>

#include "core/hardware_order.h"
#include "core/target.h"

namespace tcl::core {

std::string_view reject_reason_name(RejectReason r) {
  switch (r) {
    case RejectReason::kLineTooLong: return "line_too_long";
    case RejectReason::kInvalidRecord: return "invalid_record";
    case RejectReason::kUnmeasured: return "unmeasured";
    case RejectReason::kHardwareMismatch: return "hardware_mismatch";
    case RejectReason::kTargetMismatch: return "target_mismatch";
  }
  return "invalid_record";
}

std::string unmeasured_measurement(const Record& r) {
  if (classify(r) != RecordClass::kCandidate) return {};
  return "record is unmeasured (no costs, or all costs 0); upload it as a candidate";
}

std::string hardware_mismatch(const Platform& platform, std::string_view platform_name, const HardwareParams& record) {
  if (!platform.hardware) return {};
  static constexpr const char* kNames[8] = {"num_cores",
                                            "vector_unit_bytes",
                                            "cache_line_bytes",
                                            "max_shared_memory_per_block",
                                            "max_local_memory_per_block",
                                            "max_threads_per_block",
                                            "max_vthread_extent",
                                            "warp_size"};
  const std::array<std::int64_t, 8> mine = tvm_order(*platform.hardware), theirs = tvm_order(record);
  for (std::size_t i = 0; i < 8; ++i) {
    if (theirs[i] != mine[i]) {
      return std::string("hardware_params.") + kNames[i] + " is " + std::to_string(theirs[i]) + " but platform '" +
             std::string(platform_name) + "' has " + std::to_string(mine[i]);
    }
  }
  return {};
}

std::string target_mismatch(const Platform& platform, std::string_view platform_name, std::string_view record_target) {
  if (record_target.empty()) return {};
  const std::string name(platform_name);
  const TargetInfo mine = parse_target(platform.target);
  const TargetInfo theirs = parse_target(record_target);
  if (mine.kind != theirs.kind) {
    return "target kind '" + theirs.kind + "' does not match platform '" + name + "' (" + mine.kind + ")";
  }
  if (!mine.mcpu.empty() && !theirs.mcpu.empty() && mine.mcpu != theirs.mcpu) {
    return "target -mcpu=" + theirs.mcpu + " does not match platform '" + name + "' (-mcpu=" + mine.mcpu + ")";
  }
  if (!mine.arch.empty() && !theirs.arch.empty() && mine.arch != theirs.arch) {
    return "target -arch=" + theirs.arch + " does not match platform '" + name + "' (-arch=" + mine.arch + ")";
  }
  return {};
}

std::string unstorable(const Record& r, std::string_view canonical_key) {
  if (canonical_key.empty()) return "workload_key is empty once whitespace outside its strings is removed";
  if (canonical_key.size() > kMaxWorkloadKeyBytes) {
    return "workload_key is " + std::to_string(canonical_key.size()) + " bytes; at most " +
           std::to_string(kMaxWorkloadKeyBytes) + " are stored";
  }
  // 2^63 is the first double past int64 (whose max is not a double).
  if (!(std::fabs(r.timestamp) < 9223372036854775808.0)) return "timestamp is out of range";
  return {};
}

}  // namespace tcl::core
