// bench/lib/platform_data.h — a platform's records file (records.h's loader)
// read into the evaluation protocol's PlatformData (onboarding/platform_data.h):
// its platform, descriptor and split. For the benches that link
// tcl_onboarding.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

// --hardware-params as registered_as takes it: none, or TVM's 8. False,
// with a message, otherwise.
inline bool check_hardware_arg(const std::vector<double>& hardware) {
  if (!hardware.empty() && hardware.size() != 8) {
    std::fprintf(stderr, "--hardware-params takes TVM's 8 hardware params (num_cores, ..., warp_size)\n");
    return false;
  }
  return true;
}

// The platform as a run registers it: a non-empty `target` and TVM's 8
// hardware params `hardware` (num_cores, ..., warp_size; empty = none)
// replace what the records carry. gpu-v100's and the H100's records hold
// TVM's default CUDA params (num_cores -1) whatever the card; a descriptor
// made from the result (onboarding::descriptor_vector) sees the given facts.
inline core::Platform registered_as(core::Platform p, const std::string& target, const std::vector<double>& hardware) {
  if (!target.empty()) p.target = target;
  if (hardware.size() == 8) {
    std::array<std::int64_t, 8> h{};
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<std::int64_t>(hardware[i]);
    p.hardware = core::HardwareParams{h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]};
  }
  return p;
}

}  // namespace tcl::bench
