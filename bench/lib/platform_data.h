// bench/lib/platform_data.h — a platform's records file (records.h's loader)
// read into the evaluation protocol's PlatformData (onboarding/platform_data.h):
// its platform, descriptor and split. For the benches that link
// tcl_onboarding.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "bench/lib/records.h"
#include "onboarding/platform_data.h"

namespace tcl::bench {

// The records of `path` as platform `name`, split with `holdout` and `salt`
// (the pool kept when keep_pool); nullopt, with a message on stderr, when the
// file cannot be read or no record names a target.
inline std::optional<onboarding::PlatformData> read_platform(const std::string& path, const std::string& name,
                                                             double holdout, std::uint64_t salt,
                                                             bool keep_pool = true) {
  onboarding::PlatformDataBuilder builder(name, holdout, salt, keep_pool);
  if (!for_each_record(path, [&builder](core::Record& r) {
        builder.add(r);
        return true;
      })) {
    return std::nullopt;
  }
  auto data = builder.take();
  if (!data) {
    std::fprintf(stderr, "%s\n", data.status().to_string().c_str());
    return std::nullopt;
  }
  return std::move(*data);
}

}  // namespace tcl::bench
