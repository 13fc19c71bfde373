// core/ingest_rules.h — which uploaded record lines a platform keeps: the
// rules an upload (api/ingest.h) applies to each line, in this order:
//
//   line                                     rejected as          checked by
//   longer than the upload's line limit      kLineTooLong         the caller (it never parses the line)
//   not a TVM record (the parser's words)    kInvalidRecord       core::RecordParser (core/record.h)
//   unmeasured, sent as a measurement        kUnmeasured          unmeasured_measurement()
//   hardware_params not the platform's       kHardwareMismatch    hardware_mismatch()
//   another target kind, -mcpu or -arch      kTargetMismatch      target_mismatch()
//   not storable as the schema stands        kInvalidRecord       unstorable()
//
// Each check returns why in words ("hardware_params.num_cores is 8 but
// platform 'x16' has 16"), or "" when the line passes. The reason classes are
// a small closed set (a metric label); the report carries the words.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/platform.h"
#include "core/record.h"

namespace tcl::core {

// The longest (canonical) workload key a task may have: migrations/0001's
// CHECK, which keeps its unique index entry within PostgreSQL's limit.
inline constexpr std::size_t kMaxWorkloadKeyBytes = 2000;

// Why a line was rejected. Values are never renumbered (metric labels,
// UploadTally's array index).
enum class RejectReason : int {
  kLineTooLong = 0,       // over the upload's max_line_bytes
  kInvalidRecord = 1,     // not JSON, not a TVM record (the parser's message), or not storable (a
                          // workload_key over kMaxWorkloadKeyBytes, NUL in a string, ...)
  kUnmeasured = 2,        // a candidate sent as a measurement
  kHardwareMismatch = 3,  // hardware_params differ from the platform's
  kTargetMismatch = 4,    // another target kind, -mcpu or -arch
};
inline constexpr int kRejectReasons = 5;
std::string_view reject_reason_name(RejectReason r);  // "line_too_long", "invalid_record", ...

// A measurement upload's rule: a record classify() calls a candidate (no
// costs, or all costs 0) is refused; it belongs in the candidate pool.
std::string unmeasured_measurement(const Record& r);

// The first of the 8 hardware params (TVM order) that differs from the
// platform's, named. A platform without hardware params accepts any.
std::string hardware_mismatch(const Platform& platform, std::string_view platform_name, const HardwareParams& record);

// A record target of another kind (llvm vs cuda), or another -mcpu or -arch
// where both name one. An empty record target passes.
std::string target_mismatch(const Platform& platform, std::string_view platform_name, std::string_view record_target);

// What the schema would refuse (migrations/: tasks.workload_key is
// 1..kMaxWorkloadKeyBytes octets, measurements.timestamp a bigint), so that
// one such record is rejected alone, in our words (issue 45 #10).
// `canonical_key` is core::canonical_workload_key(r.workload_key). NUL and
// other control characters are the parser's to refuse.
std::string unstorable(const Record& r, std::string_view canonical_key);

}  // namespace tcl::core
