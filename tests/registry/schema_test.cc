// The constraints of migrations/0001_schema.sql that other code relies on.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/sha256.h"
#include "tests/registry/registry_test_env.h"

namespace tcl::registry {
namespace {

using testing::exec_sql;
using testing::query_text;

class SchemaTest : public testing::MigratedDbTest {
 protected:
  void SetUp() override {
    MigratedDbTest::SetUp();
    if (HasFatalFailure()) return;
    exec_sql(url_, R"sql(
      INSERT INTO platforms (name, target, hardware_params) VALUES ('cpu', 'llvm', '{4,64,64,0,0,0,0,0}');
      INSERT INTO tasks (workload_key) VALUES ('["abc", 1, 2]');
      INSERT INTO programs (id, task_id) VALUES ('0123456789abcdef', 1);
      INSERT INTO uploads (platform_id, kind, idempotency_key, body_sha256)
        VALUES (1, 'measurements', 'key-1', repeat('a', 64));
    )sql");
  }

  // True when the schema rejects `sql`: an integrity violation (SQLSTATE
  // 23xxx) or a write to a generated column (428C9). Any other error (a typo
  // in the test's SQL) fails the test instead of passing as "rejected".
  bool rejected(const std::string& sql) {
    try {
      exec_sql(url_, sql);
      return false;
    } catch (const pqxx::sql_error& e) {
      const std::string state = e.sqlstate();
      if (state.rfind("23", 0) == 0 || state == "428C9") return true;
      ADD_FAILURE() << "unexpected SQLSTATE " << state << ": " << e.what() << "\nin: " << sql;
      return true;
    }
  }
};

// Recomputes tasks.split_hash in C++: first 8 bytes of sha256, big-endian.
std::int64_t split_hash(const std::string& workload_key) {
  const Sha256Digest d = sha256(workload_key);
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | d[i];
  return static_cast<std::int64_t>(v);
}

TEST_F(SchemaTest, SplitHashIsReproducibleOutsideTheDatabase) {
  exec_sql(url_, "INSERT INTO tasks (workload_key) VALUES ('[\"résumé\", 7]'), ('[\"zzz\"]')");
  for (const std::string key : {"[\"abc\", 1, 2]", "[\"résumé\", 7]", "[\"zzz\"]"}) {
    pqxx::connection conn(url_);
    pqxx::nontransaction tx(conn);
    const auto row = tx.exec_params1("SELECT split_hash FROM tasks WHERE workload_key = $1", key);
    EXPECT_EQ(row[0].as<std::int64_t>(), split_hash(key)) << key;
  }
  EXPECT_TRUE(rejected("INSERT INTO tasks (workload_key) VALUES ('[\"abc\", 1, 2]')"));   // unique
  EXPECT_TRUE(rejected("INSERT INTO tasks (workload_key, split_hash) VALUES ('x', 1)"));  // generated
}

TEST_F(SchemaTest, HardwareParamsAreExactlyEightIntegers) {
  EXPECT_TRUE(rejected("INSERT INTO platforms (name, target, hardware_params) VALUES ('a', 't', '{1,2,3}')"));
  EXPECT_TRUE(
      rejected("INSERT INTO platforms (name, target, hardware_params) VALUES ('b', 't', '{1,2,3,4,5,6,7,NULL}')"));
  EXPECT_TRUE(
      rejected("INSERT INTO platforms (name, target, hardware_params) VALUES ('c', 't', '{{1,2,3,4},{5,6,7,8}}')"));
  EXPECT_FALSE(
      rejected("INSERT INTO platforms (name, target, hardware_params) VALUES ('d', 't', '{1,2,3,4,5,6,7,8}')"));
}

// The dedup key is written by registry/upload_store.cc, computed in C++ as
// tcl_measurement_dedup_key (tested in upload_store_test.cc); a writer in
// SQL calls the function.
TEST_F(SchemaTest, MeasurementsDedupOnPlatformProgramTimestampCostsAndDeriveFailed) {
  const auto insert = [](const std::string& costs, int error_no, std::int64_t timestamp, const std::string& record) {
    return "INSERT INTO measurements (platform_id, program_id, upload_id, costs, error_no, all_cost, timestamp, "
           "record, dedup_key) VALUES (1, '0123456789abcdef', 1, '" +
           costs + "', " + std::to_string(error_no) + ", 1.0, " + std::to_string(timestamp) + ", '" + record +
           "', tcl_measurement_dedup_key(1, '0123456789abcdef', " + std::to_string(timestamp) + ", '" + costs + "'))";
  };
  EXPECT_FALSE(rejected(insert("{0.5,0.25}", 0, 1600000000, "{\"v\": \"v0.6\"}")));
  // The same run again, whatever the line looks like: a duplicate.
  EXPECT_TRUE(rejected(insert("{0.5,0.25}", 0, 1600000000, "{\"v\": \"v0.5\"}")));
  EXPECT_TRUE(rejected(insert("{0.50,2.5e-1}", 0, 1600000000, "same values, spelled otherwise")));
  // Another run of the same program: kept.
  EXPECT_FALSE(rejected(insert("{0.5,0.25}", 0, 1600000001, "second run")));
  EXPECT_FALSE(rejected(insert("{0.4}", 0, 1600000000, "same second, other costs")));
  EXPECT_FALSE(rejected(insert("{0.25,0.5}", 0, 1600000000, "same costs, other order")));
  // Failed: error_no, a cost <= 0, no costs.
  EXPECT_FALSE(rejected(insert("{0.5}", 2, 1600000002, "error")));
  EXPECT_FALSE(rejected(insert("{0.5,0}", 0, 1600000003, "zero")));
  EXPECT_FALSE(rejected(insert("{}", 0, 1600000004, "empty")));
  EXPECT_TRUE(
      rejected("INSERT INTO measurements (platform_id, program_id, upload_id, costs, error_no, all_cost, "
               "timestamp, record, dedup_key) VALUES (1, '0123456789abcdef', 1, '{0.5,NULL}', 0, 1.0, "
               "1600000005, 'null cost', '00112233-4455-6677-8899-aabbccddeeff')"));
  EXPECT_EQ(query_text(url_, "SELECT string_agg(failed::text, ',' ORDER BY id) FROM measurements"),
            "false,false,false,false,true,true,true");
  // The line comes back byte-exact.
  EXPECT_EQ(query_text(url_, "SELECT record FROM measurements ORDER BY id LIMIT 1"), "{\"v\": \"v0.6\"}");
}

TEST_F(SchemaTest, CandidatePoolHoldsAProgramOncePerPlatform) {
  const std::string insert =
      "INSERT INTO candidates (platform_id, program_id, upload_id, record) VALUES (1, '0123456789abcdef', 1, 'c')";
  EXPECT_FALSE(rejected(insert));
  EXPECT_TRUE(rejected(insert));
}

TEST_F(SchemaTest, IdempotencyKeyIsUniquePerPlatform) {
  EXPECT_TRUE(
      rejected("INSERT INTO uploads (platform_id, kind, idempotency_key, body_sha256) "
               "VALUES (1, 'candidates', 'key-1', repeat('b', 64))"));
  exec_sql(url_, "INSERT INTO platforms (name, target, hardware_params) VALUES ('gpu', 'cuda', '{0,0,0,0,0,0,0,32}')");
  EXPECT_FALSE(
      rejected("INSERT INTO uploads (platform_id, kind, idempotency_key, body_sha256) "
               "VALUES (2, 'measurements', 'key-1', repeat('b', 64))"));
  // No key: any number of uploads.
  EXPECT_FALSE(
      rejected("INSERT INTO uploads (platform_id, kind, body_sha256) VALUES (1, 'measurements', repeat('c', 64))"));
  EXPECT_FALSE(
      rejected("INSERT INTO uploads (platform_id, kind, body_sha256) VALUES (1, 'measurements', repeat('c', 64))"));
  EXPECT_TRUE(rejected("INSERT INTO uploads (platform_id, kind, body_sha256) VALUES (1, 'weights', repeat('c', 64))"));
}

TEST_F(SchemaTest, ModelVersionWeightsChecksumIsVerifiedByTheDatabase) {
  const std::string good = sha256_hex(std::string("\x01\x02\x03", 3));
  EXPECT_FALSE(
      rejected("INSERT INTO model_versions (platforms, weights, weights_sha256) "
               "VALUES ('{cpu}', '\\x010203', '" +
               good + "')"));
  EXPECT_TRUE(
      rejected("INSERT INTO model_versions (platforms, weights, weights_sha256) "
               "VALUES ('{cpu}', '\\x010204', '" +
               good + "')"));
  // Fisher comes with its checksum or not at all.
  EXPECT_TRUE(
      rejected("INSERT INTO model_versions (parent, platforms, weights, weights_sha256, fisher) "
               "VALUES (1, '{cpu}', '\\x010203', '" +
               good + "', '\\x00')"));
  EXPECT_FALSE(
      rejected("INSERT INTO model_versions (parent, platforms, weights, weights_sha256, fisher, fisher_sha256) "
               "VALUES (1, '{cpu}', '\\x010203', '" +
               good + "', '\\x010203', '" + good + "')"));
  EXPECT_EQ(query_text(url_, "SELECT weights_size FROM model_versions WHERE version = 1"), "3");
  // A parent must be older.
  EXPECT_TRUE(
      rejected("INSERT INTO model_versions (parent, platforms, weights, weights_sha256) "
               "VALUES (99, '{cpu}', '\\x010203', '" +
               good + "')"));
}

TEST_F(SchemaTest, AliasChangesAreNotified) {
  const std::string good = sha256_hex(std::string("\x01", 1));
  exec_sql(url_, "INSERT INTO model_versions (platforms, weights, weights_sha256) VALUES ('{cpu}', '\\x01', '" + good +
                     "'), ('{cpu}', '\\x01', '" + good + "')");

  struct Receiver : pqxx::notification_receiver {
    using pqxx::notification_receiver::notification_receiver;
    void operator()(const std::string& payload, int) override { payloads.push_back(payload); }
    std::vector<std::string> payloads;
  };
  pqxx::connection listener(url_);
  Receiver receiver(listener, "tcl_alias_changed");
  listener.get_notifs();  // sends LISTEN

  exec_sql(url_, "INSERT INTO aliases (name, version) VALUES ('production', 1)");
  exec_sql(url_, "UPDATE aliases SET version = 2 WHERE name = 'production'");
  for (int i = 0; i < 50 && receiver.payloads.size() < 2; ++i) listener.await_notification(0, 100000);
  ASSERT_EQ(receiver.payloads.size(), 2u);
  EXPECT_NE(receiver.payloads[0].find("\"production\""), std::string::npos) << receiver.payloads[0];
  EXPECT_NE(receiver.payloads[1].find("2"), std::string::npos) << receiver.payloads[1];

  EXPECT_TRUE(rejected("INSERT INTO aliases (name, version) VALUES ('staging', 42)"));  // no such version
}

TEST_F(SchemaTest, RunningJobsHoldALease) {
  EXPECT_TRUE(rejected("INSERT INTO training_jobs (kind, platform_id, state) VALUES ('distill', 1, 'running')"));
  EXPECT_FALSE(
      rejected("INSERT INTO training_jobs (kind, platform_id, state, worker, lease_expires_at, started_at) "
               "VALUES ('distill', 1, 'running', 'w1', now() + interval '30 s', now())"));
  EXPECT_TRUE(rejected("INSERT INTO training_jobs (kind, platform_id, state) VALUES ('distill', 1, 'succeeded')"));
  EXPECT_TRUE(rejected("INSERT INTO training_jobs (kind, platform_id) VALUES ('finetune', 1)"));
  EXPECT_EQ(query_text(url_, "SELECT state FROM training_jobs"), "running");
}

TEST_F(SchemaTest, TokenScopesAreClosed) {
  EXPECT_TRUE(rejected("INSERT INTO api_tokens (name, scope, token_sha256) VALUES ('x', 'root', repeat('a', 64))"));
  EXPECT_TRUE(rejected("INSERT INTO api_tokens (name, scope, token_sha256) VALUES ('x', 'read', 'tcl_plaintext')"));
}

}  // namespace
}  // namespace tcl::registry
