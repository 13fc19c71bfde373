#include "api/ingest.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/byte_stream.h"
#include "core/ingest_rules.h"
#include "core/json_write.h"
#include "core/program_id.h"
#include "core/record.h"
#include "core/sha256.h"

namespace tcl::api {
namespace json = boost::json;

std::string platform_mismatch(const registry::PlatformRow& platform, const std::string& record_target,
                              const std::int64_t* hardware_params) {
  const core::Platform p = registry::core_platform(platform);
  if (hardware_params != nullptr) {
    const std::int64_t* hw = hardware_params;
    const core::HardwareParams record{hw[0], hw[1], hw[2], hw[3], hw[4], hw[5], hw[6], hw[7]};
    if (std::string why = core::hardware_mismatch(p, platform.name, record); !why.empty()) return why;
  }
  return core::target_mismatch(p, platform.name, record_target);
}

namespace {

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
      : platform_(registry::core_platform(platform)), platform_name_(platform.name), writer_(writer),
        options_(options) {}

  void line(std::string_view text, std::uint64_t number, bool too_long) {
    if (!status_.is_ok()) return;
    if (too_long) {
      return reject(number, RejectReason::kLineTooLong,
                    "line is longer than " + std::to_string(options_.max_line_bytes) + " bytes");
    }
    if (core::is_skippable_line(text)) return;
    ++lines_;
    if (Status s = parser_.parse(text, &record_); !s) return reject(number, RejectReason::kInvalidRecord, s.message());
    if (options_.kind == registry::UploadKind::kMeasurements) {
      if (std::string why = core::unmeasured_measurement(record_); !why.empty()) {
        return reject(number, RejectReason::kUnmeasured, std::move(why));
      }
    }
    if (record_.hardware_params) {
      if (std::string why = core::hardware_mismatch(platform_, platform_name_, *record_.hardware_params);
          !why.empty()) {
        return reject(number, RejectReason::kHardwareMismatch, std::move(why));
      }
    }
    if (std::string why = target_mismatch(record_.target); !why.empty()) {
      return reject(number, RejectReason::kTargetMismatch, std::move(why));
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
    if (std::string why = core::unstorable(record_, row_.workload_key); !why.empty()) {
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
  const std::string& target_mismatch(const std::string& target) {
    if (target != last_target_) {
      last_target_ = target;
      last_target_why_ = core::target_mismatch(platform_, platform_name_, target);
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
  const core::Platform platform_;
  const std::string platform_name_;
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
