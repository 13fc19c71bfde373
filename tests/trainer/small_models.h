// tests/trainer/small_models.h — small models and inputs shared by the
// trainer tests that build a ScoreModel directly (model_test, adapter_test).
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <memory>

#include "trainer/model_config.h"
#include "trainer/score_model.h"

namespace tcl::trainer {

// Every kind's fields set small: a model builds and runs in milliseconds.
inline ModelConfig small_config(ModelKind kind, uint64_t seed = 7) {
  ModelConfig c;
  c.kind = kind;
  c.token_dim = 8;
  c.descriptor_dim = 4;
  c.max_len = 16;
  c.d_model = 16;
  c.d_state = 4;
  c.n_heads = 2;
  c.film_hidden = 8;
  c.head_hidden = 16;
  c.seed = seed;
  return c;
}

inline std::shared_ptr<ScoreModel> make(const ModelConfig& c) {
  Result<std::shared_ptr<ScoreModel>> m = make_score_model(c);
  EXPECT_TRUE(m.is_ok()) << m.status().to_string();
  return *m;
}

struct Inputs {
  torch::Tensor tokens, lengths, descriptor;
};

inline Inputs make_inputs(int64_t B, int64_t L, const ModelConfig& c, uint64_t seed = 1) {
  torch::manual_seed(seed);
  Inputs in;
  in.tokens = torch::randn({B, L, c.token_dim});
  in.lengths = torch::randint(1, L + 1, {B}, torch::kLong);
  in.descriptor = torch::randn({B, c.descriptor_dim});
  return in;
}

}  // namespace tcl::trainer
