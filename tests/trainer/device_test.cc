// tests/trainer/device_test.cc — the training device (trainer/device.h):
// names round-trip; auto resolves to what the machine has; asking for CUDA
// where none is usable fails clearly, before any work, in train_platform
// too. Torch-free, as the daemon's config uses it. (CUDA against the CPU:
// cuda_test.cc, built only against a LibTorch with CUDA.)
#include "trainer/device.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainer/train_job.h"

namespace tcl::trainer {
namespace {

TEST(DeviceTest, NamesRoundTrip) {
  for (Device d : {Device::kAuto, Device::kCpu, Device::kCuda}) {
    const auto parsed = parse_device(device_name(d));
    ASSERT_TRUE(parsed.has_value()) << device_name(d);
    EXPECT_EQ(*parsed, d);
  }
  EXPECT_FALSE(parse_device("gpu").has_value());
  EXPECT_FALSE(parse_device("CUDA").has_value());
  EXPECT_FALSE(parse_device("").has_value());
}

TEST(DeviceTest, AutoResolvesToWhatTheMachineHas) {
  EXPECT_EQ(*resolve_device(Device::kCpu), Device::kCpu);
  const Result<Device> automatic = resolve_device(Device::kAuto);
  ASSERT_TRUE(automatic.is_ok());
  EXPECT_EQ(*automatic, cuda_available() ? Device::kCuda : Device::kCpu);
}

TEST(DeviceTest, CudaWithoutAGpuFailsBeforeTraining) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is usable here";
  const Result<Device> cuda = resolve_device(Device::kCuda);
  ASSERT_FALSE(cuda.is_ok());
  EXPECT_EQ(cuda.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(cuda.status().message().find("cuda"), std::string::npos) << cuda.status().to_string();

  // train_platform says so too, whatever the data (here: none usable).
  const std::vector<core::Record> none;
  TrainRequest request;
  request.data.records = none;
  request.resources.device = Device::kCuda;
  auto trained = train_platform(request);
  ASSERT_FALSE(trained.is_ok());
  EXPECT_EQ(trained.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(trained.status().message().find("device cuda"), std::string::npos) << trained.status().to_string();
}

}  // namespace
}  // namespace tcl::trainer
