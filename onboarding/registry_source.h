// onboarding/registry_source.h — the job workflows' records (record_source.h)
// as tcld keeps them: platforms, uploads and model versions in the registry.
// Records are streamed through registry::UploadStore::for_each_record and
// parsed as they come; a read stops early (the records read so far are
// returned) once `stop` turns true.
//
// Thread-safe as the stores are. Does not own the stores or `stop`; they
// must outlive the source.
#pragma once

#include <atomic>

#include "onboarding/record_source.h"
#include "registry/model_store.h"
#include "registry/platform_store.h"
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

}  // namespace tcl::onboarding
