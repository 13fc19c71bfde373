// registry/migrations.h — numbered SQL migrations, applied at start-up.
//
// Files are migrations/NNNN_name.sql, compiled into the binary (see
// embedded_migrations()). apply_migrations() takes a PostgreSQL advisory lock,
// applies every pending file in number order, each in its own transaction,
// and records (number, name, sha256, applied_at) in schema_migrations. An
// applied file whose checksum changed stops everything with kFailedPrecondition
// naming the file: add a new migration instead of editing a shipped one.
// Two processes migrating at once apply each file exactly once.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "registry/pg_pool.h"

namespace tcl::registry {

struct Migration {
  int number = 0;
  std::string name;  // "0001_schema"
  std::string sql;
  std::string sha256;  // hex digest of sql
};

// The migrations compiled into this binary, in number order.
const std::vector<Migration>& embedded_migrations();

struct MigrationReport {
  int applied = 0;  // files applied by this call
  int current = 0;  // highest number now applied
};

// `migrations` must be in strictly increasing number order (else
// kInvalidArgument). Holds one pool connection for the whole run; blocks while
// another process migrates. kFailedPrecondition, with nothing applied, when an
// applied file's checksum or name changed, when the database has a migration
// `migrations` lacks (a newer tcld migrated it), or when a pending file is
// numbered below an applied one. A file whose SQL fails is rolled back and
// named in the error (kInternal); the files before it stay applied.
// kUnavailable when the database cannot be reached.
Result<MigrationReport> apply_migrations(PgPool& pool, const std::vector<Migration>& migrations);

// OK when every migration is applied with a matching checksum (readiness).
// kFailedPrecondition when one is pending or differs (same rules as above),
// kUnavailable when the database cannot be reached. Read-only; takes no lock.
Status check_migrations(PgPool& pool, const std::vector<Migration>& migrations);

}  // namespace tcl::registry
