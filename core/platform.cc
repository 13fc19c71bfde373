#include "core/platform.h"

namespace tcl::core {

HardwareDescriptor descriptor_of(const Platform& p) {
  HardwareDescriptor d{};
  encode_hardware(p.hardware, p.target, d.data());
  return d;
}

}  // namespace tcl::core
