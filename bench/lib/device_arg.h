// bench/lib/device_arg.h — the training benches' --device VALUE (auto, cpu,
// cuda), read the same way in each: false, with a message, on a bad value;
// then resolved once, the same way in each.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

#include "trainer/device.h"

namespace tcl::bench {

inline bool read_device_arg(const char* value, trainer::Device* out) {
  const auto d = trainer::parse_device(value);
  if (!d) {
    std::fprintf(stderr, "--device takes auto, cpu or cuda, not '%s'\n", value);
    return false;
  }
  *out = *d;
  return true;
}

// read_device_arg as a reader for Flags::custom: `.custom("device", device_arg(&a->device))`.
// *out must outlive the Flags' parse().
inline std::function<bool(const std::string&)> device_arg(trainer::Device* out) {
  return [out](const std::string& v) { return read_device_arg(v.c_str(), out); };
}

// *device resolved (kAuto → cpu or cuda), once after parsing: a GPU run is
// then logged and cached apart from the CPU's. False, with the reason on
// stderr, when the device asked for is not there.
inline bool resolve_device_arg(trainer::Device* device) {
  const auto resolved = trainer::resolve_device(*device);
  if (!resolved) {
    std::fprintf(stderr, "%s\n", resolved.status().to_string().c_str());
    return false;
  }
  *device = *resolved;
  return true;
}

}  // namespace tcl::bench
