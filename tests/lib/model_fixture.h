// tests/lib/model_fixture.h — for tests that need a model version without
// training one: a freshly initialised (seeded) student at core's real
// feature widths, and ServingTest, a real tcld with platform "x16" whose
// versions are written straight into the registry. Header-only; the
// including test links tcl_trainer, tcl_registry and gtest.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/features.h"
#include "registry/model_store.h"
#include "registry/pg_pool.h"
#include "tests/lib/http_client.h"
#include "tests/lib/model_versions.h"
#include "tests/lib/pg_cluster.h"
#include "tests/lib/shared_data.h"
#include "tests/lib/tcld_env.h"
#include "tests/lib/tcld_process.h"
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

// A fresh database and tcld, tokens admin_ (admin) and reader_ (read),
// platform x16 (target kServingTarget, hardware kServingHardware) and the
// first `lines` records of x86-16c in lines_. Tests of the scoring routes
// (/v1/predict, /v2 infer) derive from it and call start() in SetUp.
inline constexpr const char* kServingTarget = "llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu";
inline constexpr std::array<std::int64_t, 8> kServingHardware{16, 64, 64, 0, 0, 0, 0, 0};

class ServingTest : public TcldEnvTest {
 protected:
  void start(std::size_t lines, std::vector<std::string> tcld_args = {}) {
    ASSERT_NO_FATAL_FAILURE(start_tcld(std::move(tcld_args)));
    admin_ = token("ops", "admin");
    reader_ = token("compiler", "read");
    ASSERT_EQ(call("POST", "/v1/platforms",
                   std::string(R"({"name": "x16", "hardware_params": [16,64,64,0,0,0,0,0], "target": ")") +
                       kServingTarget + "\"}",
                   admin_)
                  .status,
              201);
    pool_ = std::make_unique<registry::PgPool>(registry::PgPoolOptions{url_, 2});
    models_ = std::make_unique<registry::ModelStore>(*pool_);
    lines_ = shared_data_lines("x86-16c", lines);
  }
  HttpResult call(const std::string& method, const std::string& target, const std::string& body,
                  const std::string& token) {
    std::map<std::string, std::string> headers;
    if (!body.empty()) headers["Content-Type"] = "application/json";
    return http_call(tcld_->port(), HttpCall{method, target, body, token, headers, std::chrono::seconds(60)});
  }
  // A version covering x16 with these weights; production when none is yet.
  std::int64_t add_version(const std::string& weights) { return tcl::testing::add_version(*models_, weights); }

  std::string admin_, reader_;
  std::unique_ptr<registry::PgPool> pool_;
  std::unique_ptr<registry::ModelStore> models_;
  std::vector<std::string> lines_;
};

}  // namespace tcl::testing
