// tests/lib/model_versions.h — a model version written straight into the
// registry (registry/model_store.h), for tests that serve, list or cache
// versions without a training job. Torch-free: the weights are whatever
// bytes the test passes (tests/lib/model_fixture.h's fresh_checkpoint for a
// real model).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "registry/model_store.h"

namespace tcl::testing {

struct TestVersion {
  std::optional<std::int64_t> parent = std::nullopt;  // registry::NewVersion::parent
  std::vector<std::string> platforms{"x16"};
  bool production = true;           // made production when no version is yet
  std::string metrics_json = "{}";  // registry::NewVersion::metrics_json
};

// Stores `weights` as a new version of `store`, as `how` says. Its number;
// 0, with a test failure naming the store's reason, when it is refused.
inline std::int64_t add_version(registry::ModelStore& store, const std::string& weights, const TestVersion& how = {}) {
  registry::NewVersion v;
  v.parent = how.parent;
  v.platforms = how.platforms;
  v.weights = weights;
  v.metrics_json = how.metrics_json;
  registry::CreateVersionOptions o;
  o.make_production_if_unset = how.production;
  auto created = store.create_version(v, o);
  EXPECT_TRUE(created) << created.status().to_string();
  return created ? created->version : 0;
}

}  // namespace tcl::testing
