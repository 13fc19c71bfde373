// tests/lib/tcld_env.h — the one environment of the end-to-end tests: a
// fresh database on the shared PostgreSQL cluster, the real tcld on it
// (tcld_process.h: contract mode included), its tokens, and tcld's log on
// stderr when the test failed. Every fixture of tests/daemon/ derives from
// TcldEnvTest and adds only what is its own (platforms, data, helpers).
// Header-only; the including test links gtest and the tests/lib sources.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/lib/pg_cluster.h"
#include "tests/lib/tcld_process.h"

namespace tcl::testing {

class TcldEnvTest : public ::testing::Test {
 protected:
  // Starts tcld `command` ("serve" or "worker") with `args` on this test's
  // database, created on the first call (a later call, e.g. a restart with
  // other flags, keeps it). A running tcld_ is replaced. The test fails
  // (fatally, in this function) when tcld does not start; callers that go
  // on check with ASSERT_NO_FATAL_FAILURE or HasFatalFailure().
  void start_tcld(std::vector<std::string> args = {}, const std::string& command = "serve") {
    if (url_.empty()) url_ = PgCluster::shared().create_database();
    tcld_ = std::make_unique<TcldProcess>(url_, std::move(args), command);
    ASSERT_TRUE(tcld_->start()) << tcld_->log();
  }
  // A token of `scope` (admin, write, read) named `name`, through `tcld token create`.
  std::string token(const std::string& name, const std::string& scope) { return tcld_->create_token(name, scope); }

  void TearDown() override {
    if (HasFailure() && tcld_) std::fprintf(stderr, "---- tcld log ----\n%s\n", tcld_->log().c_str());
  }

  std::string url_;
  std::unique_ptr<TcldProcess> tcld_;
};

}  // namespace tcl::testing
