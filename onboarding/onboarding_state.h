// onboarding/onboarding_state.h — where a platform stands in onboarding
// (GET /v1/platforms/{name}'s "onboarding": {"state"}), from its counts:
//   registered     nothing uploaded yet;
//   pool_uploaded  candidates uploaded, none measured;
//   measuring      measurements uploaded.
// The names are the API's (api/openapi.yaml) and never change.
//
// Pure function; thread-safe. Torch- and SQL-free.
#pragma once

#include <string_view>

#include "registry/platform_store.h"

namespace tcl::onboarding {

std::string_view onboarding_state(const registry::PlatformCounts& counts);

}  // namespace tcl::onboarding
