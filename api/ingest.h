// api/ingest.h — turns a streamed JSON-lines body into one upload.
//
// Bytes (optionally gzip) → lines → RecordParser → checks against the
// platform (core/ingest_rules.h) → registry::UploadWriter (COPY, one transaction). Every line ends
// up accepted, a duplicate, or rejected with its number and reason; the
// report's counts are exact even when the list of rejected lines is capped.
// Nothing is stored unless the whole body arrived and the commit succeeded.
//
// Thread-safety: run_upload() is reentrant; call it on a worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/chunk_channel.h"
#include "core/byte_stream.h"
#include "core/ingest_rules.h"
#include "core/status.h"
#include "registry/platform_store.h"
#include "registry/upload_store.h"

namespace tcl::api {

// The domain rules a line must pass (core/ingest_rules.h), by their names here.
using core::kMaxWorkloadKeyBytes;
using core::kRejectReasons;
using core::reject_reason_name;
using core::RejectReason;

struct UploadOptions {
  registry::UploadKind kind = registry::UploadKind::kMeasurements;
  bool gzip = false;                       // Content-Encoding: gzip
  std::string idempotency_key;             // may be empty
  std::size_t max_line_bytes = 1 << 20;    // a longer line is rejected
  std::size_t max_rejected_listed = 1000;  // rejected lines listed in the report
  core::InflateLimits inflate;             // a gzip body past these is refused (413)
};

// What one stored upload added, for metrics (zero for a replay).
struct UploadTally {
  std::int64_t body_bytes = 0;  // as received (compressed when gzip)
  std::int64_t accepted = 0;    // new rows, failed measurements included
  std::int64_t duplicates = 0;
  std::int64_t rejected[kRejectReasons] = {};  // by RejectReason
};

struct UploadOutcome {
  std::string report_json;  // {"upload_id", "accepted", "failed", "duplicates", "rejected", ...}
  bool replayed = false;    // an earlier upload with the same key/body answered
  UploadTally tally;
};

// Reads `body` to its end. Errors: kInvalidArgument (corrupt gzip, or an
// empty body: one without a record line, where blank and '#' comment lines
// do not count), kResourceExhausted (body over its limit, or a gzip body
// inflating past options.inflate; the message names the limit), kCancelled
// (client went away), kUnavailable (database); in every error case nothing
// was stored. An Idempotency-Key seen before answers its first report
// before the body is read, whatever the body.
Result<UploadOutcome> run_upload(registry::UploadStore& uploads, const registry::PlatformRow& platform,
                                 ChunkChannel& body, const UploadOptions& options);

// Why a parsed record cannot belong to `platform`, or empty when it can:
// core::hardware_mismatch, then core::target_mismatch, for a stored platform.
std::string platform_mismatch(const registry::PlatformRow& platform, const std::string& record_target,
                              const std::int64_t* hardware_params /* 8 values or null */);

}  // namespace tcl::api
