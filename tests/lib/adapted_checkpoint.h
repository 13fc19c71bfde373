// tests/lib/adapted_checkpoint.h — a version's checkpoint that keeps a
// per-platform adapter (trainer/cost_model.h attach_adapter) without
// training one: a rank-2 adapter on every Dense layer of `trunk`, its
// factors drawn from `seed` (B nonzero, so the platform's scores differ
// from the trunk's). Header-only; the including test links tcl_trainer.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "trainer/adapter.h"
#include "trainer/cost_model.h"
#include "trainer/score_model.h"

namespace tcl::testing {

inline std::string with_adapter(const std::string& trunk, const std::string& platform, std::uint64_t seed) {
  auto model = trainer::load_trunk(trunk);
  if (!model) throw std::runtime_error(model.status().message());
  auto added = trainer::add_adapter(**model, {.rank = 2, .layers = trainer::AdapterLayers::kAll}, seed);
  if (!added) throw std::runtime_error(added.status().message());
  {
    torch::NoGradGuard no_grad;
    torch::manual_seed(seed);
    for (auto& item : (*model)->named_parameters()) {
      if (item.key().find("lora_") != std::string::npos) item.value().copy_(0.3 * torch::randn(item.value().sizes()));
    }
  }
  auto adapter = trainer::save_adapter(**model);
  if (!adapter) throw std::runtime_error(adapter.status().message());
  auto kept = trainer::attach_adapter(trunk, platform, *adapter);
  if (!kept) throw std::runtime_error(kept.status().message());
  return *kept;
}

}  // namespace tcl::testing
