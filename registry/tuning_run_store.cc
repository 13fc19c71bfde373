#include "registry/tuning_run_store.h"

#include <pqxx/transaction>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <cmath>
#include <string>

#include "registry/pg_pool_internal.h"

namespace tcl::registry {
namespace json = boost::json;
namespace {

#define TCL_ISO_UTC(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
constexpr const char* kRunColumns =
    "id, network, model, seed, rounds::text, " TCL_ISO_UTC("created_at") ", " TCL_ISO_UTC("updated_at");
#undef TCL_ISO_UTC

std::string rounds_json(const std::vector<TuningRound>& rounds) {
  json::array a;
  a.reserve(rounds.size());
  for (const TuningRound& r : rounds) {
    a.emplace_back(
        json::object{{"measured", r.measured},
                     {"network_seconds", r.network_seconds ? json::value(*r.network_seconds) : json::value(nullptr)},
                     {"wall_seconds", r.wall_seconds}});
  }
  return json::serialize(a);
}

double number(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_number() ? v->to_number<double>() : 0.0;
}

// What put() wrote, back: rows it did not write are read as far as they go.
Result<TuningRun> row_to_run(const pqxx::row& row) {
  TuningRun run;
  run.id = row[0].as<std::string>();
  run.network = row[1].as<std::string>();
  run.model = row[2].as<std::string>();
  run.seed = row[3].as<std::int64_t>();
  boost::system::error_code ec;
  const json::value rounds = json::parse(row[4].as<std::string>(), ec);
  if (ec || !rounds.is_array()) return Status::internal("tuning run '" + run.id + "': rounds is not a JSON array");
  for (const json::value& v : rounds.as_array()) {
    if (!v.is_object()) continue;
    const json::object& o = v.as_object();
    TuningRound r;
    r.measured = static_cast<std::int64_t>(number(o, "measured"));
    if (const json::value* n = o.if_contains("network_seconds"); n != nullptr && n->is_number()) {
      r.network_seconds = n->to_number<double>();
    }
    r.wall_seconds = number(o, "wall_seconds");
    run.rounds.push_back(r);
  }
  run.created_at = row[5].as<std::string>();
  run.updated_at = row[6].as<std::string>();
  return run;
}

}  // namespace

bool is_valid_tuning_run_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (std::size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-'))) return false;
  }
  return true;
}

TuningRunStore::TuningRunStore(PgPool& pool) : pool_(pool) {}

Result<TuningRun> TuningRunStore::put(std::int64_t platform_id, const TuningRun& run, bool* created) {
  if (!is_valid_tuning_run_id(run.id)) {
    return Status::invalid_argument("tuning run id must match [A-Za-z0-9][A-Za-z0-9._-]{0,127}, got '" + run.id + "'");
  }
  for (std::size_t i = 0; i < run.rounds.size(); ++i) {
    const TuningRound& r = run.rounds[i];
    if (!std::isfinite(r.wall_seconds) || (r.network_seconds && !std::isfinite(*r.network_seconds))) {
      return Status::invalid_argument("tuning run '" + run.id + "': round " + std::to_string(i + 1) +
                                      " holds a number that is not finite");
    }
  }
  const std::string what = "storing tuning run '" + run.id + "'";
  return internal::with_transaction(pool_, what, [&](pqxx::work& tx) -> Result<TuningRun> {
    if (tx.exec_params("SELECT 1 FROM platforms WHERE id = $1", platform_id).empty()) {
      return Status::not_found("platform " + std::to_string(platform_id) + " does not exist");
    }
    // xmax = 0: the row was inserted, not updated, by this statement.
    const pqxx::result r = tx.exec_params(
        std::string("INSERT INTO tuning_runs (platform_id, id, network, model, seed, rounds) "
                    "VALUES ($1, $2, $3, $4, $5, $6::jsonb) "
                    "ON CONFLICT (platform_id, id) DO UPDATE SET network = excluded.network, "
                    "model = excluded.model, seed = excluded.seed, rounds = excluded.rounds, updated_at = now() "
                    "RETURNING ") +
            kRunColumns + ", (xmax = 0)",
        platform_id, run.id, run.network, run.model, run.seed, rounds_json(run.rounds));
    if (created != nullptr) *created = r[0][7].as<bool>();
    return row_to_run(r[0]);
  });
}

Result<std::vector<TuningRun>> TuningRunStore::list(std::int64_t platform_id) {
  return internal::with_transaction(
      pool_, "listing tuning runs", [&](pqxx::work& tx) -> Result<std::vector<TuningRun>> {
        std::vector<TuningRun> out;
        for (const pqxx::row& row :
             tx.exec_params(std::string("SELECT ") + kRunColumns +
                                " FROM tuning_runs WHERE platform_id = $1 ORDER BY updated_at DESC, id",
                            platform_id)) {
          auto run = row_to_run(row);
          if (!run) return run.status();
          out.push_back(std::move(*run));
        }
        return out;
      });
}

}  // namespace tcl::registry
