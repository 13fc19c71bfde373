// api/descriptor_cache.h — platform name → hardware descriptor (the model's
// conditioning input, core/features.h), for the handlers that score programs
// (/v1/predict, /v2 infer). Platforms are immutable once created, so entries
// never go stale; the map is emptied if it ever grows past a bound.
//
// Thread-safe. Does not own the store, which must outlive the cache.
#pragma once

#include <array>
#include <string>
#include <unordered_map>

#include "core/mutex.h"
#include "core/platform.h"
#include "core/status.h"
#include "registry/platform_store.h"

namespace tcl::api {

using Descriptor = core::HardwareDescriptor;

class DescriptorCache {
 public:
  explicit DescriptorCache(registry::PlatformStore& platforms) : platforms_(platforms) {}

  // kNotFound for an unknown platform; other errors from the store.
  Result<Descriptor> get(const std::string& name) EXCLUDES(mu_) {
    {
      core::ReaderLock lock(mu_);
      if (auto it = cache_.find(name); it != cache_.end()) return it->second;
    }
    auto p = platforms_.find(name);
    if (!p) return p.status();
    const Descriptor d = core::descriptor_of(registry::core_platform(*p));
    core::WriterLock lock(mu_);
    if (cache_.size() >= kMaxEntries) cache_.clear();
    cache_[name] = d;
    return d;
  }

 private:
  static constexpr std::size_t kMaxEntries = 4096;
  registry::PlatformStore& platforms_;
  core::SharedMutex mu_;
  std::unordered_map<std::string, Descriptor> cache_ GUARDED_BY(mu_);
};

}  // namespace tcl::api
