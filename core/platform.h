// core/platform.h — the one Platform: the hardware a record was measured on
// and a model is conditioned on (a TVM target and its HardwareParams), and
// its descriptor. registry::PlatformRow (a stored row: id, name, counts) gives
// it through registry::core_platform; the trainer takes it as is.
// Thread-safe: values and pure functions.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "core/features.h"

namespace tcl::core {

struct Platform {
  std::string target;                      // TVM target string
  std::optional<HardwareParams> hardware;  // the 8 hardware params, if known

  bool operator==(const Platform&) const = default;
};

using HardwareDescriptor = std::array<float, kHardwareDim>;

// encode_hardware(p.hardware, p.target): what the student is conditioned on.
// One place for predict, sampling, jobs and the benches.
HardwareDescriptor descriptor_of(const Platform& p);

}  // namespace tcl::core
