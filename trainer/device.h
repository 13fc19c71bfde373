// trainer/device.h — where a model trains: the CPU or a CUDA GPU. Torch-free,
// so the daemon's config and the benchmarks can name a device.
//
// kAuto trains on CUDA when LibTorch was built with CUDA and a device is
// visible, on the CPU otherwise. Whatever the device, a model is built and
// initialised on the CPU (so a seed gives the same start everywhere), moved
// to the device with its optimizer state and batches, and moved back before
// its checkpoint is written: checkpoints hold CPU tensors and load anywhere.
//
// Thread-safety: pure functions (cuda_available() asks the driver once).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/status.h"

namespace tcl::trainer {

// Names are flag values (--train-device, --device); they never change.
enum class Device : std::uint8_t {
  kAuto,  // kCuda when cuda_available(), else kCpu
  kCpu,
  kCuda,  // the first visible CUDA device
};
std::string_view device_name(Device device);  // "auto", "cpu", "cuda"
std::optional<Device> parse_device(std::string_view name);

// True when LibTorch has CUDA and at least one CUDA device is visible.
bool cuda_available();

// kCpu or kCuda: kAuto resolved as above. kFailedPrecondition for kCuda
// when cuda_available() is false (the message says why: no CUDA in this
// LibTorch, or no visible device).
Result<Device> resolve_device(Device device);

}  // namespace tcl::trainer
