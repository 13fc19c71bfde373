// core/platform.h: descriptor_of is encode_hardware of the platform.
#include "core/platform.h"

#include <gtest/gtest.h>

#include <vector>

namespace tcl::core {
namespace {

TEST(PlatformTest, DescriptorIsTheEncodedHardware) {
  Platform gpu{"cuda -keys=cuda,gpu -arch=sm_80", HardwareParams{-1, 16, 64, 49152, 2147483647, 1024, 8, 32}};
  std::vector<float> expected(kHardwareDim);
  encode_hardware(gpu.hardware, gpu.target, expected.data());
  const HardwareDescriptor d = descriptor_of(gpu);
  EXPECT_EQ(std::vector<float>(d.begin(), d.end()), expected);
  EXPECT_EQ(d[8], 1.0f);   // hardware params given
  EXPECT_EQ(d[10], 1.0f);  // key gpu

  // Without hardware params the flag is 0 and the target alone speaks.
  const Platform cpu{"llvm -keys=cpu -mcpu=skylake-avx512", std::nullopt};
  const HardwareDescriptor c = descriptor_of(cpu);
  EXPECT_EQ(c[8], 0.0f);
  EXPECT_EQ(c[9], 1.0f);  // key cpu
  EXPECT_NE(c, d);
}

}  // namespace
}  // namespace tcl::core
