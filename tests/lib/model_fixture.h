// tests/lib/model_fixture.h — checkpoints for tests that need a model version
// without training one: a freshly initialised (seeded) student at core's
// real feature widths. Header-only; the including test links tcl_trainer.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/features.h"
#include "trainer/cost_model.h"

namespace tcl::testing {

inline std::string fresh_checkpoint(std::uint64_t seed, std::int64_t max_len = 72) {
  trainer::ModelConfig c;
  c.token_dim = core::kTokenDim;
  c.descriptor_dim = core::kHardwareDim;
  c.max_len = max_len;
  c.seed = seed;
  auto m = trainer::CostModel::create(c);
  if (!m) throw std::runtime_error(m.status().message());
  auto bytes = (*m)->save();
  if (!bytes) throw std::runtime_error(bytes.status().message());
  return *bytes;
}

}  // namespace tcl::testing
