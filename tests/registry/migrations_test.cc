#include "registry/migrations.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <latch>
#include <sstream>
#include <thread>

#include "core/sha256.h"
#include "tests/registry/registry_test_env.h"

namespace tcl::registry {
namespace {

using tcl::testing::PgCluster;
using testing::exec_sql;
using testing::make_pool;
using testing::query_text;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int last_number() { return embedded_migrations().back().number; }

Migration extra_migration(int number, const std::string& stem, const std::string& sql) {
  Migration m;
  m.number = number;
  std::string prefix = std::to_string(number);
  prefix.insert(0, 4 - std::min<std::size_t>(4, prefix.size()), '0');
  m.name = prefix + "_" + stem;
  m.sql = sql;
  m.sha256 = sha256_hex(sql);
  return m;
}

TEST(EmbeddedMigrations, AreTheFilesBytesInNumberOrder) {
  const auto& migrations = embedded_migrations();
  ASSERT_FALSE(migrations.empty());
  EXPECT_EQ(migrations[0].number, 1);
  EXPECT_EQ(migrations[0].name, "0001_schema");
  for (std::size_t i = 0; i < migrations.size(); ++i) {
    const Migration& m = migrations[i];
    if (i > 0) {
      EXPECT_LT(migrations[i - 1].number, m.number);
    }
    // Byte-exact: what is compiled in is what is in the file.
    EXPECT_EQ(m.sql, read_file(std::string(TCL_SOURCE_DIR) + "/migrations/" + m.name + ".sql")) << m.name;
    EXPECT_EQ(m.sha256, sha256_hex(m.sql));
    EXPECT_EQ(m.sha256.size(), 64u);
  }
}

TEST(Migrations, ApplyIsIdempotent) {
  const std::string url = PgCluster::shared().create_database();
  auto pool = make_pool(url);
  const auto& migrations = embedded_migrations();

  EXPECT_EQ(check_migrations(*pool, migrations).code(), StatusCode::kFailedPrecondition);

  auto first = apply_migrations(*pool, migrations);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ(first->applied, static_cast<int>(migrations.size()));
  EXPECT_EQ(first->current, last_number());

  auto second = apply_migrations(*pool, migrations);
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_EQ(second->applied, 0);
  EXPECT_EQ(second->current, last_number());

  EXPECT_TRUE(check_migrations(*pool, migrations).is_ok());
  EXPECT_EQ(query_text(url, "SELECT count(*) FROM schema_migrations"), std::to_string(migrations.size()));
  EXPECT_EQ(query_text(url, "SELECT sha256 FROM schema_migrations WHERE number = 1"), migrations[0].sha256);
  EXPECT_EQ(query_text(url, "SELECT name FROM schema_migrations WHERE number = 1"), "0001_schema");
  EXPECT_EQ(query_text(url, "SELECT count(*) FROM schema_migrations WHERE applied_at IS NULL"), "0");
  // The advisory lock was released.
  EXPECT_EQ(query_text(url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"), "0");
}

TEST(Migrations, CheckBeforeMigratingNamesTheCommand) {
  auto pool = make_pool(PgCluster::shared().create_database());
  const Status s = check_migrations(*pool, embedded_migrations());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("tcld migrate"), std::string::npos) << s.message();
}

TEST(Migrations, TwoConcurrentMigratorsApplyEachFileOnce) {
  for (int round = 0; round < 3; ++round) {
    const std::string url = PgCluster::shared().create_database();
    auto pool_a = make_pool(url, 2);
    auto pool_b = make_pool(url, 2);
    // Connect both first so the race is on the lock, not on connecting.
    ASSERT_TRUE(pool_a->ping().is_ok());
    ASSERT_TRUE(pool_b->ping().is_ok());

    std::latch start(2);
    Result<MigrationReport> report_a = Status::internal("not run");
    Result<MigrationReport> report_b = Status::internal("not run");
    std::thread a([&] {
      start.arrive_and_wait();
      report_a = apply_migrations(*pool_a, embedded_migrations());
    });
    std::thread b([&] {
      start.arrive_and_wait();
      report_b = apply_migrations(*pool_b, embedded_migrations());
    });
    a.join();
    b.join();

    ASSERT_TRUE(report_a.is_ok()) << report_a.status().to_string();
    ASSERT_TRUE(report_b.is_ok()) << report_b.status().to_string();
    EXPECT_EQ(report_a->applied + report_b->applied, static_cast<int>(embedded_migrations().size()));
    EXPECT_EQ(report_a->current, last_number());
    EXPECT_EQ(report_b->current, last_number());
    EXPECT_EQ(query_text(url, "SELECT count(*) FROM schema_migrations"), std::to_string(embedded_migrations().size()));
    EXPECT_TRUE(check_migrations(*pool_a, embedded_migrations()).is_ok());
  }
}

TEST(Migrations, EditedFileRefusesStartupNamingFileAndChecksums) {
  const std::string url = PgCluster::shared().create_database();
  auto pool = make_pool(url);
  ASSERT_TRUE(apply_migrations(*pool, embedded_migrations()).is_ok());

  // The binary's copy of 0001 changed after it was applied.
  std::vector<Migration> edited = embedded_migrations();
  edited[0].sql += "\n-- an innocent-looking edit\n";
  edited[0].sha256 = sha256_hex(edited[0].sql);

  auto report = apply_migrations(*pool, edited);
  ASSERT_FALSE(report.is_ok());
  const Status& s = report.status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("0001_schema.sql"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(embedded_migrations()[0].sha256), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(edited[0].sha256), std::string::npos) << s.message();

  const Status check = check_migrations(*pool, edited);
  EXPECT_EQ(check.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(check.message().find("0001_schema.sql"), std::string::npos) << check.message();

  // Same when the recorded checksum is what changed.
  exec_sql(url, "UPDATE schema_migrations SET sha256 = repeat('0', 64) WHERE number = 1");
  auto again = apply_migrations(*pool, embedded_migrations());
  ASSERT_FALSE(again.is_ok());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("0001_schema.sql"), std::string::npos);
  EXPECT_NE(again.status().message().find(std::string(64, '0')), std::string::npos);
  // The lock is released on this path too.
  EXPECT_EQ(query_text(url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"), "0");
}

TEST(Migrations, PendingFileIsAppliedAndNewerDatabaseIsRefused) {
  const std::string url = PgCluster::shared().create_database();
  auto pool = make_pool(url);
  ASSERT_TRUE(apply_migrations(*pool, embedded_migrations()).is_ok());

  std::vector<Migration> newer = embedded_migrations();
  newer.push_back(extra_migration(last_number() + 1, "extra", "CREATE TABLE extra (x int);"));
  auto report = apply_migrations(*pool, newer);
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  EXPECT_EQ(report->applied, 1);
  EXPECT_EQ(report->current, last_number() + 1);
  EXPECT_EQ(query_text(url, "SELECT to_regclass('extra') IS NOT NULL"), "t");

  // An older binary against this database: refuse rather than guess.
  const Status old = check_migrations(*pool, embedded_migrations());
  EXPECT_EQ(old.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(old.message().find(newer.back().name + ".sql"), std::string::npos) << old.message();
  EXPECT_EQ(apply_migrations(*pool, embedded_migrations()).status().code(), StatusCode::kFailedPrecondition);
}

TEST(Migrations, FailingFileIsRolledBackAndNamed) {
  const std::string url = PgCluster::shared().create_database();
  auto pool = make_pool(url);
  std::vector<Migration> list = embedded_migrations();
  list.push_back(
      extra_migration(last_number() + 1, "broken", "CREATE TABLE half_done (x int);\nSELECT * FROM no_such_table;"));
  auto report = apply_migrations(*pool, list);
  ASSERT_FALSE(report.is_ok());
  EXPECT_NE(report.status().message().find(list.back().name + ".sql"), std::string::npos)
      << report.status().to_string();
  EXPECT_NE(report.status().message().find("no_such_table"), std::string::npos);
  // Earlier files stayed applied; the broken one left nothing behind.
  EXPECT_EQ(query_text(url, "SELECT max(number) FROM schema_migrations"), std::to_string(last_number()));
  EXPECT_EQ(query_text(url, "SELECT to_regclass('half_done') IS NULL"), "t");
  // The lock died with the session: migrating again does not hang.
  auto retry = apply_migrations(*pool, embedded_migrations());
  ASSERT_TRUE(retry.is_ok()) << retry.status().to_string();
  EXPECT_EQ(retry->applied, 0);
}

TEST(Migrations, PendingFileBelowAnAppliedOneIsRefused) {
  const std::string url = PgCluster::shared().create_database();
  auto pool = make_pool(url);
  std::vector<Migration> skip = embedded_migrations();
  skip.push_back(extra_migration(last_number() + 2, "later", "CREATE TABLE later (x int);"));
  ASSERT_TRUE(apply_migrations(*pool, skip).is_ok());

  std::vector<Migration> both = embedded_migrations();
  both.push_back(extra_migration(last_number() + 1, "sooner", "CREATE TABLE sooner (x int);"));
  both.push_back(skip.back());
  auto report = apply_migrations(*pool, both);
  ASSERT_FALSE(report.is_ok());
  EXPECT_EQ(report.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(report.status().message().find(both[both.size() - 2].name + ".sql"), std::string::npos);
}

TEST(Migrations, UnsortedListIsRejected) {
  auto pool = make_pool(PgCluster::shared().create_database());
  std::vector<Migration> list = {extra_migration(2, "b", "SELECT 1;"), extra_migration(1, "a", "SELECT 1;")};
  EXPECT_EQ(apply_migrations(*pool, list).status().code(), StatusCode::kInvalidArgument);
}

TEST(Migrations, UnreachableDatabaseIsUnavailable) {
  const std::string url = PgCluster::shared().url("postgres");
  testing::ClusterRestartGuard guard;
  PgCluster::shared().stop();
  auto pool = make_pool(url);
  EXPECT_EQ(apply_migrations(*pool, embedded_migrations()).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(check_migrations(*pool, embedded_migrations()).code(), StatusCode::kUnavailable);
}

// 0004_bulk_uploads on a database with rows: they keep their content, get
// their dedup key, and are still deduplicated.
TEST(Migrations, BulkUploadSchemaKeepsStoredRows) {
  const std::string url = PgCluster::shared().create_database();
  auto pool = make_pool(url);
  std::vector<Migration> before;
  for (const Migration& m : embedded_migrations()) {
    if (m.number < 4) before.push_back(m);
  }
  ASSERT_TRUE(apply_migrations(*pool, before).is_ok());
  exec_sql(url, R"sql(
    INSERT INTO platforms (name, target, hardware_params) VALUES ('cpu', 'llvm', '{4,64,64,0,0,0,0,0}');
    INSERT INTO tasks (workload_key) VALUES ('["t"]');
    INSERT INTO programs (id, task_id, steps) VALUES ('0123456789abcdef', 1, '[["SP", 2, 0, 64, [4], 1]]');
    INSERT INTO uploads (platform_id, kind, body_sha256) VALUES (1, 'measurements', repeat('a', 64));
    INSERT INTO measurements (platform_id, program_id, upload_id, costs, error_no, all_cost, timestamp, record)
      VALUES (1, '0123456789abcdef', 1, '{0.5,0.25}', 0, 1, 1600000000, 'a'),
             (1, '0123456789abcdef', 1, '{-0.0}', 0, 1, 1600000000, 'b');
    INSERT INTO candidates (platform_id, program_id, upload_id, record) VALUES (1, '0123456789abcdef', 1, 'c');
  )sql");
  auto report = apply_migrations(*pool, embedded_migrations());
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();

  EXPECT_EQ(query_text(url, "SELECT string_agg(record, ',' ORDER BY id) FROM measurements"), "a,b");
  EXPECT_EQ(query_text(url,
                       "SELECT count(*) FROM measurements "
                       "WHERE dedup_key = tcl_measurement_dedup_key(platform_id, program_id, timestamp, costs)"),
            "2");
  EXPECT_EQ(query_text(url, "SELECT count(*) FROM programs"), "1");
  EXPECT_EQ(query_text(url,
                       "SELECT count(*) FROM information_schema.columns "
                       "WHERE table_name = 'programs' AND column_name = 'steps'"),
            "0");
  EXPECT_EQ(query_text(url,
                       "SELECT count(*) FROM pg_constraint WHERE contype = 'f' "
                       "AND conrelid IN ('programs'::regclass, 'measurements'::regclass, 'candidates'::regclass)"),
            "0");
  // A stored run is still a duplicate (0 and -0 are one cost, as before).
  for (const char* costs : {"{0.5,0.25}", "{0}"}) {
    const std::string sql = std::string(
                                "INSERT INTO measurements (platform_id, program_id, upload_id, costs, error_no, "
                                "all_cost, timestamp, record, dedup_key) VALUES (1, '0123456789abcdef', 1, '") +
                            costs +
                            "', 0, 1, 1600000000, 'again', tcl_measurement_dedup_key(1, '0123456789abcdef', "
                            "1600000000, '" +
                            costs + "'))";
    EXPECT_THROW(exec_sql(url, sql), pqxx::unique_violation) << costs;
  }
}

// 0007_platform_counts on a database with rows: every platform's counts
// are filled in, as PlatformStore::recount() would count them.
TEST(Migrations, PlatformCountsAreBackfilled) {
  const std::string url = PgCluster::shared().create_database();
  auto pool = make_pool(url);
  std::vector<Migration> before;
  for (const Migration& m : embedded_migrations()) {
    if (m.number < 7) before.push_back(m);
  }
  ASSERT_TRUE(apply_migrations(*pool, before).is_ok());
  // cpu: a measured twice (once failed), b measured, c and a candidates;
  // gpu: c measured; idle: nothing.
  exec_sql(url, R"sql(
    INSERT INTO platforms (name, target, hardware_params) VALUES
      ('cpu', 'llvm', '{4,64,64,0,0,0,0,0}'), ('gpu', 'cuda', '{4,64,64,0,0,0,0,0}'), ('idle', 'llvm', '{4,64,64,0,0,0,0,0}');
    INSERT INTO tasks (workload_key) VALUES ('["t1"]'), ('["t2"]');
    INSERT INTO programs (id, task_id) VALUES ('aaaaaaaaaaaaaaaa', 1), ('bbbbbbbbbbbbbbbb', 1), ('cccccccccccccccc', 2);
    INSERT INTO uploads (platform_id, kind, body_sha256) VALUES (1, 'measurements', repeat('a', 64));
    INSERT INTO measurements (platform_id, program_id, upload_id, costs, error_no, all_cost, timestamp, record, dedup_key)
      SELECT *, tcl_measurement_dedup_key(platform_id, program_id, timestamp, costs) FROM (VALUES
        (1, 'aaaaaaaaaaaaaaaa', 1, '{0.5}'::float8[], 0, 1.0, 1::bigint, 'a1'),
        (1, 'aaaaaaaaaaaaaaaa', 1, '{0.5}', 4, 1.0, 2, 'a2'),
        (1, 'bbbbbbbbbbbbbbbb', 1, '{0.5}', 0, 1.0, 1, 'b1'),
        (2, 'cccccccccccccccc', 1, '{0.5}', 0, 1.0, 1, 'c1')
      ) AS v (platform_id, program_id, upload_id, costs, error_no, all_cost, timestamp, record);
    INSERT INTO candidates (platform_id, program_id, upload_id, record)
      VALUES (1, 'cccccccccccccccc', 1, 'c'), (1, 'aaaaaaaaaaaaaaaa', 1, 'a');
  )sql");
  auto report = apply_migrations(*pool, embedded_migrations());
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  // name: programs tasks measurements failed candidates
  EXPECT_EQ(query_text(url,
                       "SELECT string_agg(format('%s: %s %s %s %s %s', p.name, c.programs, c.tasks, "
                       "c.measurements, c.failed, c.candidates), ', ' ORDER BY p.id) "
                       "FROM platforms p JOIN platform_counts c ON c.platform_id = p.id"),
            "cpu: 3 2 2 1 2, gpu: 1 1 1 0 0, idle: 0 0 0 0 0");
}

}  // namespace
}  // namespace tcl::registry
