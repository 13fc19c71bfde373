// bench/lib/device_arg.h — the training benches' --device VALUE (auto, cpu,
// cuda), read the same way in each: false, with a message, on a bad value.
#pragma once

#include <cstdio>

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

}  // namespace tcl::bench
