// registry/migrations_internal.h — the SQL files compiled into the binary.
// embedded_sql_files() is defined in a source generated at build time by
// registry/embed_migrations.cmake from migrations/NNNN_name.sql.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tcl::registry::internal {

struct EmbeddedSqlFile {
  int number;                 // 1 for 0001_schema.sql
  const char* name;           // "0001_schema" (static storage)
  const unsigned char* data;  // the file's bytes (static storage)
  std::size_t size;
};

// In number order; numbers are unique (checked when generating).
std::vector<EmbeddedSqlFile> embedded_sql_files();

// Key of the session-level advisory lock held while migrating ("TCL-MIGR").
// Never change it: two binaries with different keys could migrate at once.
inline constexpr std::int64_t kMigrationLockKey = 0x54434C2D4D494752;

}  // namespace tcl::registry::internal
