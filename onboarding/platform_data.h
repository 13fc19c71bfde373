// onboarding/platform_data.h — one platform as the evaluation protocol sees
// it (DESIGN §10; bench_onboarding and bench_continual): its name, its
// core::Platform (of the first record that names a target, as
// trainer::platform_of) and descriptor, and its records split through
// SplitBuilder (onboarding/split.h: the held-out tasks, the pool one record
// per program).
//
// Records are handed in one at a time, as the caller reads them (a file need
// not be held twice; reading files is the caller's). Not thread-safe; plain
// C++.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/platform.h"
#include "core/record.h"
#include "core/status.h"
#include "onboarding/split.h"

namespace tcl::onboarding {

struct PlatformData {
  std::string name;
  core::Platform platform;
  std::vector<float> descriptor;  // descriptor_vector(platform)
  std::int64_t records = 0;       // records added, measured or not
  PlatformSplit split;
};

// core::descriptor_of(p) as the vector the round and the trainer take.
std::vector<float> descriptor_vector(const core::Platform& p);

class PlatformDataBuilder {
 public:
  // holdout, salt, keep_pool: as SplitBuilder's.
  PlatformDataBuilder(std::string name, double holdout, std::uint64_t salt, bool keep_pool = true)
      : name_(std::move(name)), split_(holdout, salt, keep_pool) {}

  // As SplitBuilder::add (`r` may be moved from); the first record with a
  // target gives the platform.
  void add(core::Record& r);
  // The platform; kNotFound when no record added named a target. The
  // builder starts empty again.
  Result<PlatformData> take();

 private:
  std::string name_;
  SplitBuilder split_;
  std::int64_t records_ = 0;
  bool have_platform_ = false;
  core::Platform platform_;
};

}  // namespace tcl::onboarding
