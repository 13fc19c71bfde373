// tests/registry/registry_test_env.h — shared set-up for registry tests: a
// fresh database per test (tests/lib/pg_cluster.h), a pool on it, and plain
// SQL helpers to inspect what the stores wrote.
#pragma once

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "registry/migrations.h"
#include "registry/pg_pool.h"
#include "registry/platform_store.h"
#include "tests/lib/pg_cluster.h"

namespace tcl::registry::testing {

inline std::unique_ptr<PgPool> make_pool(const std::string& url, int size = 4,
                                         std::chrono::milliseconds checkout_timeout = std::chrono::seconds(5)) {
  PgPoolOptions options;
  options.url = url;
  options.size = size;
  options.checkout_timeout = checkout_timeout;
  return std::make_unique<PgPool>(std::move(options));
}

// Runs `sql` on its own connection (autocommit); returns the result.
inline pqxx::result exec_sql(const std::string& url, const std::string& sql) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  return tx.exec(sql);
}

// The first field of the first row of `sql`, as text ("" for NULL).
inline std::string query_text(const std::string& url, const std::string& sql) {
  const pqxx::result r = exec_sql(url, sql);
  if (r.empty() || r[0][0].is_null()) return "";
  return r[0][0].as<std::string>();
}

// A migrated, empty database and a pool on it.
class MigratedDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    url_ = tcl::testing::PgCluster::shared().create_database();
    pool_ = make_pool(url_);
    auto report = apply_migrations(*pool_, embedded_migrations());
    ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  }

  // Registers one of the two test platforms, "cpu" (a 4-core x86) or "gpu"
  // (a CUDA card); its id, or 0 after a test failure.
  std::int64_t add_platform(const std::string& name) {
    NewPlatform p = name == "gpu" ? NewPlatform{"gpu", "cuda", {0, 0, 0, 49152, 0, 1024, 8, 32}, ""}
                                  : NewPlatform{"cpu", "llvm", {4, 64, 64, 0, 0, 0, 0, 0}, ""};
    auto created = PlatformStore(*pool_).create(p);
    if (!created) {
      ADD_FAILURE() << name << ": " << created.status().to_string();
      return 0;
    }
    return created->id;
  }

  std::string url_;
  std::unique_ptr<PgPool> pool_;
};

// Holds the upload lock (the advisory key of registry/upload_store.cc:
// class "TCLU", object 1) on a connection of its own, as an upload that is
// committing does, until release() or destruction.
class UploadLockHolder {
 public:
  explicit UploadLockHolder(const std::string& url) : conn_(std::in_place, url) {
    pqxx::nontransaction tx(*conn_);
    tx.exec("SELECT pg_advisory_lock(1413696597, 1)");  // 0x54434c55
  }
  void release() { conn_.reset(); }  // the session ends, and its lock with it

 private:
  std::optional<pqxx::connection> conn_;
};

// Restarts the shared cluster when it goes out of scope, so a failing
// assertion in an outage test never leaves the cluster down.
class ClusterRestartGuard {
 public:
  ClusterRestartGuard() = default;
  ~ClusterRestartGuard() { tcl::testing::PgCluster::shared().start(); }
  ClusterRestartGuard(const ClusterRestartGuard&) = delete;
  ClusterRestartGuard& operator=(const ClusterRestartGuard&) = delete;
};

}  // namespace tcl::registry::testing
