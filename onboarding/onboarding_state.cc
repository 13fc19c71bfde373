#include "onboarding/onboarding_state.h"

namespace tcl::onboarding {

std::string_view onboarding_state(const registry::PlatformCounts& counts) {
  if (counts.measurements > 0) return "measuring";
  if (counts.candidates > 0) return "pool_uploaded";
  return "registered";
}

}  // namespace tcl::onboarding
