// onboarding/registry_source.h — the workflows' records as tcld keeps them
// in the registry: a job's (record_source.h: platforms, uploads and model
// versions) and a sample-request round's (round.h: a platform's uploads
// and the programs pending in open rounds).
// Records are streamed through registry::UploadStore::for_each_record and
// parsed as they come; a read stops early (the records read so far are
// returned) once `stop` turns true.
//
// Thread-safe as the stores are. Does not own the stores or `stop`; they
// must outlive the source.
#pragma once

#include <atomic>

#include "onboarding/record_source.h"
#include "onboarding/round.h"
#include "registry/model_store.h"
#include "registry/platform_store.h"
#include "registry/sample_store.h"
#include "registry/upload_store.h"

namespace tcl::onboarding {

class RegistrySource : public RecordSource {
 public:
  RegistrySource(registry::PlatformStore& platforms, registry::UploadStore& uploads, registry::ModelStore& models,
                 const std::atomic<bool>& stop);

  Result<SourcePlatform> platform(const std::string& name) override;
  Result<SourcePlatform> find_platform(const std::string& name) override;
  Result<std::vector<core::Record>> measured_share(const SourcePlatform& platform, double keep,
                                                   std::unordered_set<std::string>* program_ids) override;
  Result<std::vector<core::Record>> unmeasured_pool(const SourcePlatform& platform,
                                                    const std::unordered_set<std::string>& measured,
                                                    double keep) override;
  Result<std::vector<core::Record>> old_programs(const SourcePlatform& platform, double keep) override;
  Status judged_records(const SourcePlatform& platform, JudgedRecords* judged) override;
  Result<std::int64_t> resolve(const std::string& alias_or_version) override;
  Result<std::int64_t> alias(const std::string& name) override;
  Result<SourceVersion> version(std::int64_t version) override;
  Result<std::string> weights(std::int64_t version) override;
  Result<std::string> fisher(std::int64_t version) override;

 private:
  registry::PlatformStore& platforms_;
  registry::UploadStore& uploads_;
  registry::ModelStore& models_;
  const std::atomic<bool>& stop_;
};

// One platform's round pool (RoundSource) in the registry. Does not own the stores.
class RegistryRoundSource : public RoundSource {
 public:
  RegistryRoundSource(registry::UploadStore& uploads, registry::SampleStore& samples, std::int64_t platform_id);

  Status measured(const std::function<bool(const std::string& program_id, SourceRecord& record)>& sink) override;
  Result<std::unordered_set<std::string>> pending() override;
  Status candidates(const std::function<bool(const std::string& program_id, SourceRecord& record)>& sink) override;

 private:
  Status stream(registry::UploadKind kind,
                const std::function<bool(const std::string& program_id, SourceRecord& record)>& sink);

  registry::UploadStore& uploads_;
  registry::SampleStore& samples_;
  const std::int64_t platform_id_;
};

}  // namespace tcl::onboarding
