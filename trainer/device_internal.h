// trainer/device_internal.h — torch's side of trainer/device.h, for the
// trainer's own files: the torch::Device of a resolved Device, and host
// tensors uploaded without stalling the GPU.
//
// Thread-safety: pure functions.
#pragma once

#include <torch/torch.h>

#include "trainer/device.h"

namespace tcl::trainer {

// kCpu → torch::kCPU, kCuda → torch::kCUDA; `device` must be resolved
// (resolve_device), kAuto throws c10::Error.
torch::Device torch_device(Device device);

// `host` (a CPU tensor) on `device`. The CPU: `host` itself, no copy (it
// may view the caller's memory). CUDA: a pinned staging copy and an
// asynchronous upload, so a step's small index and mask tensors do not
// wait for the GPU's queue to drain; `host` may be reused at once.
torch::Tensor upload(const torch::Tensor& host, const torch::Device& device);

}  // namespace tcl::trainer
