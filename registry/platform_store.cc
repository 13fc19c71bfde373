#include "registry/platform_store.h"

#include <pqxx/nontransaction>
#include <pqxx/transaction>

#include <charconv>
#include <string>

#include "registry/pg_pool_internal.h"

namespace tcl::registry {

core::HardwareParams hardware_params_of(const PlatformRow& p) {
  const auto& hw = p.hardware_params;
  return core::HardwareParams{hw[0], hw[1], hw[2], hw[3], hw[4], hw[5], hw[6], hw[7]};
}

core::Platform core_platform(const PlatformRow& p) { return core::Platform{p.target, hardware_params_of(p)}; }
namespace {

// Columns shared by every platform query, in the order row_to_platform reads.
constexpr const char* kPlatformColumns =
    "id, name, target, array_to_string(hardware_params, ','), description, "
    "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')";

std::string array_literal(const std::array<std::int64_t, 8>& values) {
  std::string s = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(values[i]);
  }
  s += '}';
  return s;
}

// "1,2,...,8" → the array; the schema guarantees exactly 8 non-NULL values.
Status parse_params(std::string_view text, std::array<std::int64_t, 8>& out) {
  std::size_t i = 0;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  while (p < end && i < out.size()) {
    auto [next, ec] = std::from_chars(p, end, out[i]);
    if (ec != std::errc()) break;
    ++i;
    p = next;
    if (p < end && *p == ',') ++p;
  }
  if (i != out.size() || p != end) return Status::internal("malformed hardware_params '" + std::string(text) + "'");
  return Status::ok();
}

Result<PlatformRow> row_to_platform(const pqxx::row& row) {
  PlatformRow p;
  p.id = row[0].as<std::int64_t>();
  p.name = row[1].as<std::string>();
  p.target = row[2].as<std::string>();
  if (Status s = parse_params(row[3].as<std::string>(), p.hardware_params); !s) return s;
  p.description = row[4].as<std::string>();
  p.created_at = row[5].as<std::string>();
  return p;
}

// Counts for one platform from its rows (recount()). `programs` and `tasks`
// cover both measured and candidate programs; `measurements`/`failed` split
// on measurements.failed.
constexpr const char* kRecountQuery = R"sql(
WITH platform_programs AS (
  SELECT program_id FROM measurements WHERE platform_id = $1
  UNION
  SELECT program_id FROM candidates WHERE platform_id = $1
)
SELECT
  (SELECT count(*) FROM platform_programs),
  (SELECT count(DISTINCT p.task_id) FROM platform_programs pp JOIN programs p ON p.id = pp.program_id),
  (SELECT count(*) FROM measurements WHERE platform_id = $1 AND NOT failed),
  (SELECT count(*) FROM measurements WHERE platform_id = $1 AND failed),
  (SELECT count(*) FROM candidates WHERE platform_id = $1)
)sql";

// The kept counts (migrations/0007); no row means nothing stored.
constexpr const char* kKeptCounts =
    "coalesce(c.programs, 0), coalesce(c.tasks, 0), coalesce(c.measurements, 0), coalesce(c.failed, 0), "
    "coalesce(c.candidates, 0)";

PlatformCounts row_to_counts(const pqxx::row& row, pqxx::row::size_type first) {
  PlatformCounts c;
  c.programs = row[first].as<std::int64_t>();
  c.tasks = row[first + 1].as<std::int64_t>();
  c.measurements = row[first + 2].as<std::int64_t>();
  c.failed = row[first + 3].as<std::int64_t>();
  c.candidates = row[first + 4].as<std::int64_t>();
  return c;
}

}  // namespace

Result<PlatformRow> PlatformStore::create(const NewPlatform& p) {
  const std::string what = "creating platform '" + p.name + "'";
  return internal::with_transaction(pool_, what, [&](pqxx::work& tx) -> Result<PlatformRow> {
    try {
      const pqxx::row row =
          tx.exec_params1(std::string("INSERT INTO platforms (name, target, hardware_params, description) "
                                      "VALUES ($1, $2, $3::bigint[], $4) RETURNING ") +
                              kPlatformColumns,
                          p.name, p.target, array_literal(p.hardware_params), p.description);
      return row_to_platform(row);
    } catch (const pqxx::unique_violation&) {
      return Status::already_exists("platform '" + p.name + "' already exists");
    }
  });
}

Result<std::vector<PlatformRow>> PlatformStore::list(bool with_counts) {
  const std::string sql = with_counts ? std::string("SELECT ") + kPlatformColumns + ", " + kKeptCounts +
                                            " FROM platforms LEFT JOIN platform_counts c ON c.platform_id = "
                                            "platforms.id ORDER BY platforms.id"
                                      : std::string("SELECT ") + kPlatformColumns + " FROM platforms ORDER BY id";
  return internal::with_transaction(pool_, "listing platforms",
                                    [&](pqxx::work& tx) -> Result<std::vector<PlatformRow>> {
                                      std::vector<PlatformRow> out;
                                      for (const pqxx::row& row : tx.exec(sql)) {
                                        auto p = row_to_platform(row);
                                        if (!p) return p.status();
                                        if (with_counts) p->counts = row_to_counts(row, 6);
                                        out.push_back(std::move(*p));
                                      }
                                      return out;
                                    });
}

Result<PlatformRow> PlatformStore::find(const std::string& name) { return read(name, /*with_counts=*/false); }

Result<PlatformRow> PlatformStore::get(const std::string& name) { return read(name, /*with_counts=*/true); }

Result<PlatformRow> PlatformStore::read(const std::string& name, bool with_counts) {
  const std::string what = "reading platform '" + name + "'";
  // One statement, so no BEGIN/COMMIT round trips (the route is bound by them).
  const std::string sql = with_counts
                              ? std::string("SELECT ") + kPlatformColumns + ", " + kKeptCounts +
                                    " FROM platforms LEFT JOIN platform_counts c ON c.platform_id = platforms.id"
                                    " WHERE name = $1"
                              : std::string("SELECT ") + kPlatformColumns + " FROM platforms WHERE name = $1";
  return internal::with_connection(pool_, what, [&](pqxx::connection& conn) -> Result<PlatformRow> {
    pqxx::nontransaction tx(conn);
    const pqxx::result r = tx.exec_params(sql, name);
    if (r.empty()) return Status::not_found("platform '" + name + "' does not exist");
    auto p = row_to_platform(r[0]);
    if (!p) return p.status();
    if (with_counts) p->counts = row_to_counts(r[0], 6);
    return p;
  });
}

Result<PlatformCounts> PlatformStore::recount(std::int64_t platform_id) {
  const std::string what = "recounting platform " + std::to_string(platform_id);
  return internal::with_transaction(pool_, what, [&](pqxx::work& tx) -> Result<PlatformCounts> {
    return row_to_counts(tx.exec_params1(kRecountQuery, platform_id), 0);
  });
}

}  // namespace tcl::registry
