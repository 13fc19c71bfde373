// trainer/device.cc
#include "trainer/device.h"

#include <torch/torch.h>

#include "trainer/device_internal.h"

namespace tcl::trainer {

std::string_view device_name(Device device) {
  switch (device) {
    case Device::kAuto: return "auto";
    case Device::kCpu: return "cpu";
    case Device::kCuda: return "cuda";
  }
  return "unknown";
}

std::optional<Device> parse_device(std::string_view name) {
  if (name == "auto") return Device::kAuto;
  if (name == "cpu") return Device::kCpu;
  if (name == "cuda") return Device::kCuda;
  return std::nullopt;
}

bool cuda_available() { return torch::cuda::is_available(); }

Result<Device> resolve_device(Device device) {
  switch (device) {
    case Device::kCpu: return Device::kCpu;
    case Device::kAuto: return cuda_available() ? Device::kCuda : Device::kCpu;
    case Device::kCuda:
      if (cuda_available()) return Device::kCuda;
      if (!at::hasCUDA()) {
        return Status::failed_precondition("device cuda: this LibTorch was built without CUDA; use device auto or cpu");
      }
      return Status::failed_precondition(
          "device cuda: LibTorch has CUDA but sees no GPU (check nvidia-smi and CUDA_VISIBLE_DEVICES); use device "
          "auto or cpu");
  }
  return Status::invalid_argument("device: unknown value");
}

torch::Device torch_device(Device device) {
  TORCH_CHECK(device != Device::kAuto, "torch_device: resolve the device first");
  return device == Device::kCuda ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
}

torch::Tensor upload(const torch::Tensor& host, const torch::Device& device) {
  if (device.is_cpu()) return host;
  return host.pin_memory().to(device, /*non_blocking=*/true);
}

}  // namespace tcl::trainer
