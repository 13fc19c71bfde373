#include "registry/migrations.h"

#include <pqxx/nontransaction>
#include <pqxx/transaction>

#include <algorithm>
#include <string>
#include <vector>

#include "core/sha256.h"
#include "registry/migrations_internal.h"
#include "registry/pg_pool_internal.h"

namespace tcl::registry {
namespace {

// Created by code, not by a migration: it records the migrations themselves.
constexpr const char* kCreateSchemaMigrations = R"sql(
CREATE TABLE IF NOT EXISTS schema_migrations (
  number     integer PRIMARY KEY CHECK (number > 0),
  name       text NOT NULL,
  sha256     text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
))sql";

struct AppliedMigration {
  int number = 0;
  std::string name;
  std::string sha256;
};

std::string file_name(const std::string& name) { return name + ".sql"; }

Status validate_list(const std::vector<Migration>& migrations) {
  for (std::size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].number <= 0) {
      return Status::invalid_argument("migration '" + migrations[i].name + "' has number " +
                                      std::to_string(migrations[i].number) + "; numbers start at 1");
    }
    if (i > 0 && migrations[i].number <= migrations[i - 1].number) {
      return Status::invalid_argument("migrations are not in strictly increasing number order at '" +
                                      migrations[i].name + "'");
    }
  }
  return Status::ok();
}

// Whether `migrations` can run against a database that has `applied`; on OK,
// the ones still to apply, in order. kFailedPrecondition when an applied file
// changed (checksum or name), when the database has a migration this binary
// lacks (a newer tcld migrated it), or when a pending file is numbered below
// an applied one (it could never run in order).
Result<std::vector<const Migration*>> plan(const std::vector<AppliedMigration>& applied,
                                           const std::vector<Migration>& migrations) {
  int max_applied = 0;
  for (const AppliedMigration& a : applied) {
    max_applied = std::max(max_applied, a.number);
    auto it =
        std::find_if(migrations.begin(), migrations.end(), [&](const Migration& m) { return m.number == a.number; });
    if (it == migrations.end()) {
      return Status::failed_precondition("the database has migration " + file_name(a.name) +
                                         " applied, which this binary does not contain (a newer tcld "
                                         "migrated it); run a tcld at least that new");
    }
    if (it->name != a.name) {
      return Status::failed_precondition("migration number " + std::to_string(a.number) + " was applied as " +
                                         file_name(a.name) + " but this binary has " + file_name(it->name) +
                                         "; never rename a shipped migration");
    }
    if (it->sha256 != a.sha256) {
      return Status::failed_precondition(
          "migration " + file_name(a.name) + " changed after it was applied: the database recorded sha256 " + a.sha256 +
          ", this binary has sha256 " + it->sha256 + "; add a new migration instead of editing a shipped one");
    }
  }
  std::vector<const Migration*> pending;
  for (const Migration& m : migrations) {
    const bool done =
        std::any_of(applied.begin(), applied.end(), [&](const AppliedMigration& a) { return a.number == m.number; });
    if (done) continue;
    if (m.number < max_applied) {
      return Status::failed_precondition("migration " + file_name(m.name) +
                                         " is pending but a higher-numbered one is already applied; "
                                         "renumber it above " +
                                         std::to_string(max_applied));
    }
    pending.push_back(&m);
  }
  return pending;
}

std::vector<AppliedMigration> read_applied(pqxx::transaction_base& tx) {
  std::vector<AppliedMigration> out;
  for (const auto& row : tx.exec("SELECT number, name, sha256 FROM schema_migrations ORDER BY number")) {
    AppliedMigration a;
    a.number = row[0].as<int>();
    a.name = row[1].as<std::string>();
    a.sha256 = row[2].as<std::string>();
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

const std::vector<Migration>& embedded_migrations() {
  static const std::vector<Migration> migrations = [] {
    std::vector<Migration> out;
    for (const internal::EmbeddedSqlFile& f : internal::embedded_sql_files()) {
      Migration m;
      m.number = f.number;
      m.name = f.name;
      m.sql.assign(reinterpret_cast<const char*>(f.data), f.size);
      m.sha256 = sha256_hex(m.sql);
      out.push_back(std::move(m));
    }
    return out;
  }();
  return migrations;
}

Result<MigrationReport> apply_migrations(PgPool& pool, const std::vector<Migration>& migrations) {
  if (Status s = validate_list(migrations); !s) return s;
  // One connection for the whole run: the advisory lock belongs to its session.
  auto lease = pool.acquire();
  if (!lease) return lease.status().with_context("migrating");
  pqxx::connection& conn = lease->conn();
  std::string context = "migrating";
  try {
    {
      pqxx::nontransaction tx(conn);
      tx.exec_params("SELECT pg_advisory_lock($1)", internal::kMigrationLockKey);
    }
    auto unlock = [&] {
      pqxx::nontransaction tx(conn);
      tx.exec_params("SELECT pg_advisory_unlock($1)", internal::kMigrationLockKey);
    };
    // Under the lock: concurrent CREATE TABLE IF NOT EXISTS can still collide.
    std::vector<AppliedMigration> applied;
    {
      pqxx::work tx(conn);
      tx.exec0(kCreateSchemaMigrations);
      applied = read_applied(tx);
      tx.commit();
    }
    auto pending = plan(applied, migrations);
    if (!pending) {
      unlock();
      return pending.status();
    }
    MigrationReport report;
    for (const AppliedMigration& a : applied) report.current = std::max(report.current, a.number);
    for (const Migration* m : *pending) {
      context = "applying migration " + file_name(m->name);
      pqxx::work tx(conn);
      tx.exec(m->sql);
      tx.exec_params0("INSERT INTO schema_migrations (number, name, sha256) VALUES ($1, $2, $3)", m->number, m->name,
                      m->sha256);
      tx.commit();
      ++report.applied;
      report.current = m->number;
    }
    context = "migrating";
    unlock();
    return report;
  } catch (...) {
    bool lost = false;
    Status s = internal::status_from_current_exception(context, &lost);
    // Closing the session releases the advisory lock whatever state it is in.
    lease->discard();
    if (s.code() == StatusCode::kInvalidArgument) s = Status(StatusCode::kInternal, s.message());
    return s;
  }
}

Status check_migrations(PgPool& pool, const std::vector<Migration>& migrations) {
  if (Status s = validate_list(migrations); !s) return s;
  return internal::with_connection(pool, "checking migrations", [&](pqxx::connection& conn) -> Status {
    pqxx::read_transaction tx(conn);
    if (tx.exec1("SELECT to_regclass('schema_migrations') IS NOT NULL")[0].as<bool>() == false) {
      return Status::failed_precondition("the database has no schema_migrations table: run `tcld migrate`");
    }
    auto pending = plan(read_applied(tx), migrations);
    if (!pending) return pending.status();
    if (!pending->empty()) {
      return Status::failed_precondition(std::to_string(pending->size()) + " migration(s) not applied, first " +
                                         file_name(pending->front()->name) + ": run `tcld migrate`");
    }
    return Status::ok();
  });
}

}  // namespace tcl::registry
