#include "api/ingest.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>

#include "core/byte_stream.h"
#include "core/json_write.h"
#include "core/program_id.h"
#include "core/record.h"
#include "core/sha256.h"
#include "core/target.h"

namespace tcl::api {
namespace json = boost::json;

std::string platform_mismatch(const registry::PlatformRow& platform, const std::string& record_target,
                              const std::int64_t* hardware_params) {
  if (hardware_params != nullptr) {
    static constexpr const char* kNames[8] = {"num_cores",
                                              "vector_unit_bytes",
                                              "cache_line_bytes",
                                              "max_shared_memory_per_block",
                                              "max_local_memory_per_block",
                                              "max_threads_per_block",
                                              "max_vthread_extent",
                                              "warp_size"};
    for (int i = 0; i < 8; ++i) {
      if (hardware_params[i] != platform.hardware_params[static_cast<std::size_t>(i)]) {
        return std::string("hardware_params.") + kNames[i] + " is " + std::to_string(hardware_params[i]) +
               " but platform '" + platform.name + "' has " +
               std::to_string(platform.hardware_params[static_cast<std::size_t>(i)]);
      }
    }
  }
  if (record_target.empty()) return {};
  const core::TargetInfo mine = core::parse_target(platform.target);
  const core::TargetInfo theirs = core::parse_target(record_target);
  if (mine.kind != theirs.kind) {
    return "target kind '" + theirs.kind + "' does not match platform '" + platform.name + "' (" + mine.kind + ")";
  }
  if (!mine.mcpu.empty() && !theirs.mcpu.empty() && mine.mcpu != theirs.mcpu) {
    return "target -mcpu=" + theirs.mcpu + " does not match platform '" + platform.name + "' (-mcpu=" + mine.mcpu + ")";
  }
  if (!mine.arch.empty() && !theirs.arch.empty() && mine.arch != theirs.arch) {
    return "target -arch=" + theirs.arch + " does not match platform '" + platform.name + "' (-arch=" + mine.arch + ")";
  }
  return {};
}

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

namespace {

// Why a parsed record cannot be stored as the schema stands (migrations/:
// tasks.workload_key is 1..kMaxWorkloadKeyBytes octets, measurements.timestamp
// a bigint), or empty when it can. Checked per line so that one such record
// is rejected alone, in our words (issue 45 #10). NUL and other control
// characters in a record's strings are the parser's to refuse (core/record.h).
std::string unstorable(const core::Record& r, std::string_view canonical_key) {
  if (canonical_key.empty()) return "workload_key is empty once whitespace outside its strings is removed";
  if (canonical_key.size() > kMaxWorkloadKeyBytes) {
    return "workload_key is " + std::to_string(canonical_key.size()) + " bytes; at most " +
           std::to_string(kMaxWorkloadKeyBytes) + " are stored";
  }
  // 2^63 is the first double past int64 (whose max is not a double).
  if (!(std::fabs(r.timestamp) < 9223372036854775808.0)) return "timestamp is out of range";
  return {};
}

// A row the database refused although the checks above let it through is our
// bug, not the client's: 500 in our words, PostgreSQL's text (table,
// constraint, row data) only in the log (registry/ maps integrity and data
// errors to these two codes). Outages and cancels pass unchanged.
Status from_database(Status s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kAlreadyExists: return Status::internal("the database refused an accepted row: " + s.message());
    default: return s;
  }
}

// Line-by-line state of one upload.
class Ingest {
 public:
  Ingest(const registry::PlatformRow& platform, registry::UploadWriter& writer, const UploadOptions& options)
      : platform_(platform), writer_(writer), options_(options) {}

  void line(std::string_view text, std::uint64_t number, bool too_long) {
    if (!status_.is_ok()) return;
    if (too_long) {
      return reject(number, RejectReason::kLineTooLong,
                    "line is longer than " + std::to_string(options_.max_line_bytes) + " bytes");
    }
    if (core::is_skippable_line(text)) return;
    ++lines_;
    if (Status s = parser_.parse(text, &record_); !s) return reject(number, RejectReason::kInvalidRecord, s.message());
    const bool measurements = options_.kind == registry::UploadKind::kMeasurements;
    const core::RecordClass cls = core::classify(record_);
    if (measurements && cls == core::RecordClass::kCandidate) {
      return reject(number, RejectReason::kUnmeasured,
                    "record is unmeasured (no costs, or all costs 0); upload it as a candidate");
    }
    std::int64_t hw[8];
    const std::int64_t* hw_ptr = nullptr;
    if (record_.hardware_params) {
      const auto& h = *record_.hardware_params;
      const std::int64_t v[8] = {h.num_cores,
                                 h.vector_unit_bytes,
                                 h.cache_line_bytes,
                                 h.max_shared_memory_per_block,
                                 h.max_local_memory_per_block,
                                 h.max_threads_per_block,
                                 h.max_vthread_extent,
                                 h.warp_size};
      std::copy(v, v + 8, hw);
      hw_ptr = hw;
    }
    RejectReason why_class = RejectReason::kTargetMismatch;
    if (std::string why = mismatch(record_.target, hw_ptr, &why_class); !why.empty()) {
      return reject(number, why_class, why);
    }

    // The steps are not stored apart from the line (migrations/0004): only
    // the program id needs their canonical form. Consecutive lines of a log
    // nearly always share their task, so its canonical key is kept.
    if (!have_workload_key_ || record_.workload_key != last_workload_key_) {
      have_workload_key_ = true;
      last_workload_key_ = record_.workload_key;
      row_.workload_key = core::canonical_workload_key(record_.workload_key);
    }
    // What the schema would refuse is this line's problem, not the upload's.
    if (std::string why = unstorable(record_, row_.workload_key); !why.empty()) {
      return reject(number, RejectReason::kInvalidRecord, why);
    }
    row_.program_id = core::program_id(record_);
    row_.record.assign(text);
    row_.costs = record_.costs;
    row_.error_no = record_.error_no;
    row_.all_cost = record_.all_cost;
    row_.timestamp = static_cast<std::int64_t>(std::llround(record_.timestamp));
    if (Status s = writer_.add(row_); !s) status_ = from_database(std::move(s));
  }

  void reject(std::uint64_t number, RejectReason reason_class, std::string reason) {
    ++rejected_count_;
    ++rejected_by_reason_[static_cast<int>(reason_class)];
    if (rejected_.size() < options_.max_rejected_listed) {
      rejected_.push_back(json::object{{"line", number}, {"reason", std::move(reason)}});
    }
  }

  // The target check depends only on the target string: remember the last
  // answer, since a log repeats the same target on every line.
  std::string mismatch(const std::string& target, const std::int64_t* hw, RejectReason* reason_class) {
    if (hw != nullptr) {
      std::string why = platform_mismatch(platform_, "", hw);
      if (!why.empty()) {
        *reason_class = RejectReason::kHardwareMismatch;
        return why;
      }
    }
    *reason_class = RejectReason::kTargetMismatch;
    if (target != last_target_) {
      last_target_ = target;
      last_target_why_ = platform_mismatch(platform_, target, nullptr);
    }
    return last_target_why_;
  }

  std::string report(std::int64_t upload_id, const registry::UploadCounts& counts) const {
    json::object o{{"upload_id", upload_id},
                   {"kind", registry::upload_kind_name(options_.kind)},
                   {"lines", lines_},
                   {"accepted", counts.inserted},
                   {"failed", counts.failed},
                   {"duplicates", counts.duplicates},
                   {"rejected_count", rejected_count_},
                   {"rejected", rejected_},
                   {"rejected_truncated", rejected_count_ > static_cast<std::int64_t>(rejected_.size())}};
    return core::write_json(o);
  }

  const Status& status() const { return status_; }
  // Whether any line held a record, valid or not (blank and comment lines do not count).
  bool saw_record_line() const { return lines_ > 0 || rejected_count_ > 0; }
  const std::int64_t* rejected_by_reason() const { return rejected_by_reason_; }

 private:
  const registry::PlatformRow& platform_;
  registry::UploadWriter& writer_;
  const UploadOptions& options_;
  core::RecordParser parser_;
  core::Record record_;
  registry::UploadRow row_;
  json::array rejected_;
  std::int64_t rejected_count_ = 0;
  std::int64_t rejected_by_reason_[kRejectReasons] = {};
  std::int64_t lines_ = 0;
  bool have_workload_key_ = false;
  std::string last_workload_key_;     // as in the record; row_.workload_key is its canonical form
  std::string last_target_ = "\x01";  // never a real target
  std::string last_target_why_;
  Status status_;
};

}  // namespace

Result<UploadOutcome> run_upload(registry::UploadStore& uploads, const registry::PlatformRow& platform,
                                 ChunkChannel& body, const UploadOptions& options) {
  if (!options.idempotency_key.empty()) {
    auto previous = uploads.find_previous(platform.id, options.kind, options.idempotency_key, "");
    if (!previous) return previous.status();
    if (*previous) return UploadOutcome{(*previous)->report_json, true, {}};
  }
  auto writer = uploads.begin(platform.id, options.kind);
  if (!writer) return writer.status();
  Ingest ingest(platform, **writer, options);
  core::LineSplitter lines(options.max_line_bytes, [&ingest](std::string_view text, std::uint64_t n, bool too_long) {
    ingest.line(text, n, too_long);
  });
  core::GzipInflater inflater(options.inflate);
  Sha256Stream body_hash;
  std::string chunk;
  UploadTally tally;
  while (body.pop_wait(&chunk)) {
    tally.body_bytes += static_cast<std::int64_t>(chunk.size());
    body_hash.update(chunk);
    if (options.gzip) {
      if (Status s = inflater.feed(chunk, [&lines](std::string_view out) { lines.feed(out); }); !s) return s;
    } else {
      lines.feed(chunk);
    }
    if (!ingest.status().is_ok()) return ingest.status();
  }
  if (Status s = body.status(); !s) return s;  // cut off: the writer rolls back
  if (options.gzip) {
    if (Status s = inflater.finish(); !s) return s;
  }
  lines.finish();
  if (!ingest.status().is_ok()) return ingest.status();
  if (!ingest.saw_record_line()) {
    return Status::invalid_argument(
        "the upload body is empty: send at least one record line (blank lines and '#' comment lines do not count)");
  }

  const std::string hash = body_hash.finish_hex();
  auto committed = (*writer)->commit(options.idempotency_key, hash,
                                     [&ingest, &tally](std::int64_t id, const registry::UploadCounts& counts) {
                                       tally.accepted = counts.inserted;
                                       tally.duplicates = counts.duplicates;
                                       return ingest.report(id, counts);
                                     });
  if (!committed) return from_database(committed.status());
  if (committed->replayed) return UploadOutcome{committed->report_json, true, {}};
  std::copy(ingest.rejected_by_reason(), ingest.rejected_by_reason() + kRejectReasons, tally.rejected);
  return UploadOutcome{committed->report_json, false, tally};
}

}  // namespace tcl::api
