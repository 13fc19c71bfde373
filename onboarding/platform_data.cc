#include "onboarding/platform_data.h"

#include <span>
#include <utility>

#include "trainer/dataset.h"

namespace tcl::onboarding {

std::vector<float> descriptor_vector(const core::Platform& p) {
  const core::HardwareDescriptor d = core::descriptor_of(p);
  return {d.begin(), d.end()};
}

void PlatformDataBuilder::add(core::Record& r) {
  ++records_;
  if (!have_platform_) {
    auto p = trainer::platform_of(std::span<const core::Record>(&r, 1));
    if (p) {
      platform_ = std::move(*p);
      have_platform_ = true;
    }
  }
  split_.add(r);
}

Result<PlatformData> PlatformDataBuilder::take() {
  PlatformData p;
  p.name = name_;
  p.records = records_;
  p.split = split_.take();
  const bool found = have_platform_;
  p.platform = std::move(platform_);
  records_ = 0;
  have_platform_ = false;
  platform_ = core::Platform{};
  if (!found) return Status::not_found(p.name + ": no record names a target");
  p.descriptor = descriptor_vector(p.platform);
  return p;
}

}  // namespace tcl::onboarding
