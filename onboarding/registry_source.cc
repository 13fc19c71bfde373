#include "onboarding/registry_source.h"

#include <utility>

#include "core/record.h"
#include "onboarding/distill.h"

namespace tcl::onboarding {

namespace {

// A stored line, parsed on first need.
class StoredLine : public SourceRecord {
 public:
  explicit StoredLine(core::RecordParser& parser) : parser_(parser) {}
  void reset(const std::string& line) {
    line_ = &line;
    parsed_ = false;
    ok_ = false;
  }
  const core::Record* get() override {
    if (!parsed_) {
      parsed_ = true;
      ok_ = parser_.parse(*line_, &record_).is_ok();
    }
    return ok_ ? &record_ : nullptr;
  }

 private:
  core::RecordParser& parser_;
  const std::string* line_ = nullptr;
  bool parsed_ = false, ok_ = false;
  core::Record record_;
};

SourcePlatform source_platform(const registry::PlatformRow& row) {
  return SourcePlatform{.id = row.id,
                        .name = row.name,
                        .platform = registry::core_platform(row),
                        .measured = row.counts.measurements,
                        .failed = row.counts.failed,
                        .candidates = row.counts.candidates};
}

}  // namespace

RegistrySource::RegistrySource(registry::PlatformStore& platforms, registry::UploadStore& uploads,
                               registry::ModelStore& models, const std::atomic<bool>& stop)
    : platforms_(platforms), uploads_(uploads), models_(models), stop_(stop) {}

Result<SourcePlatform> RegistrySource::platform(const std::string& name) {
  auto row = platforms_.get(name);
  if (!row) return row.status();
  return source_platform(*row);
}

Result<SourcePlatform> RegistrySource::find_platform(const std::string& name) {
  auto row = platforms_.find(name);
  if (!row) return row.status();
  return source_platform(*row);
}

Result<std::vector<core::Record>> RegistrySource::measured_share(const SourcePlatform& platform, double keep,
                                                                 std::unordered_set<std::string>* program_ids) {
  std::vector<core::Record> records;
  core::RecordParser parser;
  core::Record record;
  Status read =
      uploads_.for_each_record(platform.id, registry::UploadKind::kMeasurements, [&](const registry::StoredRecord& r) {
        if (!in_share(r.program_id, keep)) return !stop_.load();
        if (!parser.parse(r.record, &record).is_ok()) return !stop_.load();
        records.push_back(record);
        if (program_ids != nullptr) program_ids->insert(r.program_id);
        return !stop_.load();
      });
  if (!read) return read;
  return records;
}

Result<std::vector<core::Record>> RegistrySource::unmeasured_pool(const SourcePlatform& platform,
                                                                  const std::unordered_set<std::string>& measured,
                                                                  double keep) {
  std::vector<core::Record> records;
  core::RecordParser parser;
  core::Record record;
  Status read =
      uploads_.for_each_record(platform.id, registry::UploadKind::kCandidates, [&](const registry::StoredRecord& r) {
        if (!in_share(r.program_id, keep)) return !stop_.load();
        if (measured.count(r.program_id)) return !stop_.load();
        if (!parser.parse(r.record, &record).is_ok()) return !stop_.load();
        records.push_back(record);
        return !stop_.load();
      });
  if (!read) return read;
  return records;
}

Result<std::vector<core::Record>> RegistrySource::old_programs(const SourcePlatform& platform, double keep) {
  std::vector<core::Record> programs;
  core::RecordParser parser;
  core::Record record;
  std::unordered_set<std::string> seen;  // a program measured and also a candidate: once
  for (const registry::UploadKind kind : {registry::UploadKind::kMeasurements, registry::UploadKind::kCandidates}) {
    Status read = uploads_.for_each_record(platform.id, kind, [&](const registry::StoredRecord& r) {
      if (!in_share(r.program_id, keep) || !seen.insert(r.program_id).second) return !stop_.load();
      if (!parser.parse(r.record, &record).is_ok()) return !stop_.load();
      if (kind == registry::UploadKind::kMeasurements && core::measurement_failed(record.error_no, record.costs)) {
        return !stop_.load();  // a program that did not build or run is no input
      }
      record.costs.clear();  // the program only: no old measurement is trained on
      record.all_cost = 0;
      programs.push_back(record);
      return !stop_.load();
    });
    if (!read) return read;
  }
  return programs;
}

Status RegistrySource::judged_records(const SourcePlatform& platform, JudgedRecords* judged) {
  core::RecordParser parser;
  core::Record record;
  return uploads_.for_each_record(platform.id, registry::UploadKind::kMeasurements,
                                  [&](const registry::StoredRecord& r) {
                                    if (parser.parse(r.record, &record).is_ok()) judged->add(r.program_id, record);
                                    return !stop_.load();
                                  });
}

Result<std::int64_t> RegistrySource::resolve(const std::string& alias_or_version) {
  return models_.resolve(alias_or_version);
}

Result<std::int64_t> RegistrySource::alias(const std::string& name) {
  auto a = models_.get_alias(name);
  if (!a) return a.status();
  return a->version;
}

Result<SourceVersion> RegistrySource::version(std::int64_t version) {
  auto info = models_.get(version);
  if (!info) return info.status();
  return SourceVersion{.version = info->version, .parent = info->parent, .platforms = std::move(info->platforms)};
}

Result<std::string> RegistrySource::weights(std::int64_t version) {
  auto blob = models_.weights(version);
  if (!blob) return blob.status();
  return std::move(blob->bytes);
}

Result<std::string> RegistrySource::fisher(std::int64_t version) {
  auto blob = models_.fisher(version);
  if (!blob) return blob.status();
  return std::move(blob->bytes);
}

RegistryRoundSource::RegistryRoundSource(registry::UploadStore& uploads, registry::SampleStore& samples,
                                         std::int64_t platform_id)
    : uploads_(uploads), samples_(samples), platform_id_(platform_id) {}

Status RegistryRoundSource::stream(
    registry::UploadKind kind, const std::function<bool(const std::string& program_id, SourceRecord& record)>& sink) {
  core::RecordParser parser;
  StoredLine line(parser);
  return uploads_.for_each_record(platform_id_, kind, [&](const registry::StoredRecord& r) {
    line.reset(r.record);
    return sink(r.program_id, line);
  });
}

Status RegistryRoundSource::measured(
    const std::function<bool(const std::string& program_id, SourceRecord& record)>& sink) {
  return stream(registry::UploadKind::kMeasurements, sink);
}

Result<std::unordered_set<std::string>> RegistryRoundSource::pending() {
  return samples_.pending_programs(platform_id_);
}

Status RegistryRoundSource::candidates(
    const std::function<bool(const std::string& program_id, SourceRecord& record)>& sink) {
  return stream(registry::UploadKind::kCandidates, sink);
}

}  // namespace tcl::onboarding
