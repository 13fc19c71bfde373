// registry/platform_store.h — hardware platforms (table `platforms`).
// Thread-safe (every call takes its own connection from the pool).
// Does not own `pool`; it must outlive the store.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/features.h"
#include "core/platform.h"
#include "core/record.h"
#include "core/status.h"
#include "registry/pg_pool.h"

namespace tcl::registry {

struct PlatformCounts {
  std::int64_t programs = 0;
  std::int64_t tasks = 0;
  std::int64_t measurements = 0;  // successful measurements
  std::int64_t failed = 0;        // failed measurements
  std::int64_t candidates = 0;    // programs in the candidate pool
};

// A row of table `platforms`: a registered platform (its name, id and counts).
// The hardware a model is conditioned on is core::Platform: core_platform(row).
struct PlatformRow {
  std::int64_t id = 0;
  std::string name;
  std::string target;
  std::array<std::int64_t, 8> hardware_params{};
  std::string description;
  std::string created_at;  // ISO-8601 UTC
  PlatformCounts counts;   // filled by get() and list(true); zero otherwise
};

// The platform's TVM HardwareParams, and its target and those as the one
// core::Platform (core/platform.h; core::descriptor_of gives what the student
// is conditioned on).
core::HardwareParams hardware_params_of(const PlatformRow& p);
core::Platform core_platform(const PlatformRow& p);

struct NewPlatform {
  std::string name;  // validated by the caller: [a-z0-9][a-z0-9._-]{0,63}
  std::string target;
  std::array<std::int64_t, 8> hardware_params{};
  std::string description;
};

class PlatformStore {
 public:
  explicit PlatformStore(PgPool& pool) : pool_(pool) {}
  // kAlreadyExists when the name is taken.
  Result<PlatformRow> create(const NewPlatform& p);
  // Every platform, oldest first; `with_counts`: each with its kept counts, as get() reads them.
  Result<std::vector<PlatformRow>> list(bool with_counts = false);
  // With its counts, as kept by UploadStore (table platform_counts,
  // migrations/0007): one indexed read, whatever the platform holds.
  // kNotFound when unknown.
  Result<PlatformRow> get(const std::string& name);
  // Like get() without the counts (one indexed lookup; for hot paths).
  Result<PlatformRow> find(const std::string& name);
  // The counts computed from the stored rows: O(rows) (seconds for a large
  // platform). For tests, to check that get()'s kept counts equal them.
  // An unknown id has zero counts.
  Result<PlatformCounts> recount(std::int64_t platform_id);

 private:
  Result<PlatformRow> read(const std::string& name, bool with_counts);
  PgPool& pool_;
};

}  // namespace tcl::registry
