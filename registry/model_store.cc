#include "registry/model_store.h"

#include <pqxx/binarystring>
#include <pqxx/transaction>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <charconv>
#include <set>
#include <string>

#include "core/sha256.h"
#include "registry/pg_pool_internal.h"

namespace tcl::registry {
namespace {

#define TCL_ISO_UTC(col) "coalesce(to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), '')"

// Every version query reads these columns, in the order row_to_version
// expects. No bytes: octet_length of a TOASTed value reads only its header.
constexpr const char* kVersionColumns =
    "mv.version, mv.parent, array_to_json(mv.platforms)::text, mv.config::text, mv.metrics::text, "
    "mv.training_summary::text, mv.weights_sha256, mv.weights_size, mv.fisher_sha256, "
    "coalesce(octet_length(mv.fisher), 0), mv.status, mv.status_reasons::text, " TCL_ISO_UTC(
        "mv.status_changed_at") ", " TCL_ISO_UTC("mv.created_at") ", "
                                "coalesce((SELECT json_agg(a.name ORDER BY a.name) FROM aliases a "
                                "WHERE a.version = mv.version)::text, '[]')";
// kVersionColumns with config, metrics and training_summary projected, and the
// version's trained_on after them (ModelStore::lineage_summary).
constexpr const char* kSummaryConfig =
    "jsonb_strip_nulls(jsonb_build_object('kind', mv.config->'kind', 'model', mv.config->'model', "
    "'init', mv.config->'init', 'distill', CASE WHEN jsonb_typeof(mv.config->'distill') = 'object' THEN "
    "jsonb_strip_nulls(jsonb_build_object('method', mv.config#>'{distill,method}', "
    "'adapter_rank', mv.config#>'{distill,adapter_rank}')) END))::text";
constexpr const char* kSummaryMetrics =
    "coalesce((SELECT jsonb_object_agg(e.key, CASE WHEN jsonb_typeof(e.value->'standing_split') = 'object' "
    "THEN jsonb_build_object('standing_split', e.value->'standing_split') ELSE e.value END) "
    "FROM jsonb_each(CASE WHEN jsonb_typeof(mv.metrics) = 'object' THEN mv.metrics ELSE '{}' END) e "
    "WHERE e.key <> 'versus_parent' AND jsonb_typeof(e.value) = 'object'";
constexpr const char* kSummaryMetricsFor =
    " AND e.key = ANY(ARRAY(SELECT jsonb_array_elements_text($1::jsonb)))";  // metrics_for
constexpr const char* kSummaryMetricsEnd = "), '{}')::text";
// The first platform whose standing split says held_out (the one the version's job trained).
constexpr const char* kTrainedOn =
    "coalesce((SELECT e.key FROM jsonb_each(CASE WHEN jsonb_typeof(mv.metrics) = 'object' THEN mv.metrics "
    "ELSE '{}' END) e WHERE e.key <> 'versus_parent' AND jsonb_typeof(e.value->'standing_split') = 'object' "
    "AND e.value->'standing_split' ? 'held_out' LIMIT 1), '')";
constexpr const char* kSummaryTail =
    "mv.weights_sha256, mv.weights_size, mv.fisher_sha256, "
    "coalesce(octet_length(mv.fisher), 0), mv.status, ";
constexpr const char* kSummaryDates =
    TCL_ISO_UTC("mv.status_changed_at") ", " TCL_ISO_UTC("mv.created_at") ", "
                                        "coalesce((SELECT json_agg(a.name ORDER BY a.name) FROM aliases a "
                                        "WHERE a.version = mv.version)::text, '[]')";

std::string summary_columns(const SummaryParts& parts) {
  return std::string("mv.version, mv.parent, array_to_json(mv.platforms)::text, ") + kSummaryConfig + ", " +
         (parts.metrics ? std::string(kSummaryMetrics) + (parts.metrics_for.empty() ? "" : kSummaryMetricsFor) +
                              kSummaryMetricsEnd
                        : "'{}'") +
         ", '{}', " + kSummaryTail + (parts.status_reasons ? "mv.status_reasons::text, " : "'{}', ") + kSummaryDates +
         ", " + kTrainedOn;
}
constexpr const char* kAliasColumns = "name, version, " TCL_ISO_UTC("updated_at");
constexpr const char* kMoveColumns = "id, alias, from_version, to_version, actor, reason, " TCL_ISO_UTC("moved_at");

#undef TCL_ISO_UTC

std::string version_name(std::int64_t version) { return "model version " + std::to_string(version); }

// A JSON array of strings (as the database renders one) → the strings.
Result<std::vector<std::string>> parse_string_array(std::string_view json) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(json, ec);
  if (ec || !v.is_array()) return Status::internal("expected a JSON array of strings, got '" + std::string(json) + "'");
  std::vector<std::string> out;
  out.reserve(v.as_array().size());
  for (const boost::json::value& e : v.as_array()) {
    if (!e.is_string()) return Status::internal("expected a JSON array of strings, got '" + std::string(json) + "'");
    out.emplace_back(e.as_string());
  }
  return out;
}

std::string json_string_array(const std::vector<std::string>& items) {
  boost::json::array a;
  a.reserve(items.size());
  for (const std::string& s : items) a.emplace_back(s);
  return boost::json::serialize(a);
}

Result<VersionInfo> row_to_version(const pqxx::row& row) {
  VersionInfo v;
  v.version = row[0].as<std::int64_t>();
  if (!row[1].is_null()) v.parent = row[1].as<std::int64_t>();
  auto platforms = parse_string_array(row[2].as<std::string>());
  if (!platforms) return platforms.status().with_context(version_name(v.version) + " platforms");
  v.platforms = std::move(*platforms);
  v.config_json = row[3].as<std::string>();
  v.metrics_json = row[4].as<std::string>();
  v.training_summary_json = row[5].as<std::string>();
  v.weights_sha256 = row[6].as<std::string>();
  v.weights_size = row[7].as<std::int64_t>();
  if (!row[8].is_null()) v.fisher_sha256 = row[8].as<std::string>();
  v.fisher_size = row[9].as<std::int64_t>();
  const auto status = parse_version_status(row[10].as<std::string>());
  if (!status) return Status::internal(version_name(v.version) + " has unknown status '" + row[10].c_str() + "'");
  v.status = *status;
  v.status_reasons_json = row[11].as<std::string>();
  v.status_changed_at = row[12].as<std::string>();
  v.created_at = row[13].as<std::string>();
  auto aliases = parse_string_array(row[14].as<std::string>());
  if (!aliases) return aliases.status().with_context(version_name(v.version) + " aliases");
  v.aliases = std::move(*aliases);
  return v;
}

Result<VersionInfo> read_version(pqxx::work& tx, std::int64_t version) {
  const pqxx::result r = tx.exec_params(
      std::string("SELECT ") + kVersionColumns + " FROM model_versions mv WHERE mv.version = $1", version);
  if (r.empty()) return Status::not_found(version_name(version) + " does not exist");
  return row_to_version(r[0]);
}

Alias row_to_alias(const pqxx::row& row) {
  Alias a;
  a.name = row[0].as<std::string>();
  a.version = row[1].as<std::int64_t>();
  a.updated_at = row[2].as<std::string>();
  return a;
}

AliasMove row_to_move(const pqxx::row& row) {
  AliasMove m;
  m.id = row[0].as<std::int64_t>();
  m.alias = row[1].as<std::string>();
  if (!row[2].is_null()) m.from_version = row[2].as<std::int64_t>();
  m.to_version = row[3].as<std::int64_t>();
  m.actor = row[4].as<std::string>();
  m.reason = row[5].as<std::string>();
  m.moved_at = row[6].as<std::string>();
  return m;
}

Result<Alias> read_alias(pqxx::work& tx, const std::string& name) {
  const pqxx::result r = tx.exec_params(std::string("SELECT ") + kAliasColumns + " FROM aliases WHERE name = $1", name);
  if (r.empty()) return Status::not_found("alias '" + name + "' does not exist");
  return row_to_alias(r[0]);
}

// Writes one alias_history row and returns it.
AliasMove record_move(pqxx::work& tx, const std::string& alias, std::optional<std::int64_t> from, std::int64_t to,
                      const std::string& actor, const std::string& reason) {
  const pqxx::row row =
      tx.exec_params1(std::string("INSERT INTO alias_history (alias, from_version, to_version, actor, reason) "
                                  "VALUES ($1, nullif($2, '')::bigint, $3, $4, $5) RETURNING ") +
                          kMoveColumns,
                      alias, from ? std::to_string(*from) : std::string(), to, actor, reason);
  return row_to_move(row);
}

bool version_exists(pqxx::work& tx, std::int64_t version) {
  return !tx.exec_params("SELECT 1 FROM model_versions WHERE version = $1", version).empty();
}

Status check_actor(std::string_view actor) {
  if (actor.empty() || actor.size() > 256) return Status::invalid_argument("actor must be 1 to 256 bytes");
  return Status::ok();
}

Status check_alias_name(const std::string& alias) {
  if (is_valid_alias_name(alias)) return Status::ok();
  return Status::invalid_argument("invalid alias name '" + alias + "' (want [a-z0-9][a-z0-9._-]{0,63})");
}

// Points `alias` at `version` (which must exist) inside `tx`; see set_alias().
Result<SetAliasResult> move_alias(pqxx::work& tx, const std::string& alias, std::int64_t version,
                                  const std::string& actor, const std::string& reason) {
  // The row lock serializes movers of one alias: each records the version
  // it really moved from.
  const char* kLockSql = "SELECT version FROM aliases WHERE name = $1 FOR UPDATE";
  pqxx::result current = tx.exec_params(kLockSql, alias);
  SetAliasResult out;
  if (current.empty()) {
    const pqxx::result created = tx.exec_params(
        "INSERT INTO aliases (name, version) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING name", alias,
        version);
    if (!created.empty()) {
      out.changed = true;
      out.move = record_move(tx, alias, std::nullopt, version, actor, reason);
    } else {
      current = tx.exec_params(kLockSql, alias);  // created concurrently; committed by now
    }
  }
  if (!out.changed) {
    if (current.empty()) return Status::unavailable("alias '" + alias + "' changed concurrently; retry");
    const std::int64_t from = current[0][0].as<std::int64_t>();
    if (from != version) {
      tx.exec_params0("UPDATE aliases SET version = $2, updated_at = now() WHERE name = $1", alias, version);
      out.changed = true;
      out.move = record_move(tx, alias, from, version, actor, reason);
    }
  }
  auto a = read_alias(tx, alias);
  if (!a) return a.status();
  out.alias = std::move(*a);
  return out;
}

// Locks the job a new version ends (training_jobs is registry/job_queue.h's
// table; the version and the job's finish share one transaction). OK with
// nullopt: the job runs under `owner.worker`, go on. OK with a version: the
// job already succeeded under that worker with it (a retried call).
Result<std::optional<std::int64_t>> lock_job(pqxx::work& tx, const JobOwner& owner) {
  const std::string name = "job " + std::to_string(owner.job_id);
  const pqxx::result r = tx.exec_params(
      "SELECT state, coalesce(worker, ''), result_version, cancel_requested_at IS NOT NULL "
      "FROM training_jobs WHERE id = $1 FOR UPDATE",
      owner.job_id);
  if (r.empty()) return Status::not_found(name + " does not exist");
  const std::string state = r[0][0].as<std::string>();
  const std::string worker = r[0][1].as<std::string>();
  if (worker == owner.worker && state == "succeeded" && !r[0][2].is_null()) {
    return std::optional<std::int64_t>(r[0][2].as<std::int64_t>());
  }
  if (worker == owner.worker && state == "cancelled") {
    return Status::cancelled(name + " was cancelled while running; no version stored");
  }
  if (worker != owner.worker || state != "running") {
    return Status::failed_precondition(name + " is not running under worker '" + owner.worker + "' (it is " + state +
                                       (worker.empty() ? "" : ", worker '" + worker + "'") + "); no version stored");
  }
  if (r[0][3].as<bool>()) return Status::cancelled(name + " was cancelled while running; no version stored");
  return std::optional<std::int64_t>();
}

// After the version's row exists: its status and reasons, the production
// alias when unset, the aliases of `options`, the job's finish.
Status publish_version(pqxx::work& tx, std::int64_t version, VersionStatus status,
                       const CreateVersionOptions& options) {
  std::string reasons = options.status_reasons_json;
  if (options.make_production_if_unset) {
    // ON CONFLICT DO NOTHING: a concurrent creator that set it first wins;
    // we then wait for its commit and leave production alone.
    const pqxx::result created = tx.exec_params(
        "INSERT INTO aliases (name, version) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING name",
        std::string(kProductionAlias), version);
    if (!created.empty()) {
      record_move(tx, std::string(kProductionAlias), std::nullopt, version, options.actor, options.reason);
      if (!options.first_version_reasons_json.empty()) {
        status = VersionStatus::kPromoted;
        reasons = options.first_version_reasons_json;
      }
    }
  }
  if (!reasons.empty()) {
    tx.exec_params0(
        "UPDATE model_versions SET status = $2, status_reasons = $3::jsonb, status_changed_at = now() "
        "WHERE version = $1",
        version, std::string(version_status_name(status)), reasons);
  }
  for (const AliasUpdate& a : options.aliases) {
    if (auto moved = move_alias(tx, a.alias, version, a.actor, a.reason); !moved) return moved.status();
  }
  if (options.job) {
    tx.exec_params0(
        "UPDATE training_jobs SET state = 'succeeded', result_version = $2, error = NULL, finished_at = now() "
        "WHERE id = $1",
        options.job->job_id, version);
  }
  return Status::ok();
}

}  // namespace

std::string_view version_status_name(VersionStatus s) {
  switch (s) {
    case VersionStatus::kCandidate: return "candidate";
    case VersionStatus::kPromoted: return "promoted";
    case VersionStatus::kRejected: return "rejected";
  }
  return "candidate";
}

std::optional<VersionStatus> parse_version_status(std::string_view s) {
  if (s == "candidate") return VersionStatus::kCandidate;
  if (s == "promoted") return VersionStatus::kPromoted;
  if (s == "rejected") return VersionStatus::kRejected;
  return std::nullopt;
}

bool is_valid_alias_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-'))) return false;
  }
  return true;
}

Result<VersionInfo> ModelStore::create_version(const NewVersion& v, const CreateVersionOptions& options) {
  if (v.weights.empty()) return Status::invalid_argument("a model version needs weights");
  if (v.platforms.empty()) return Status::invalid_argument("a model version covers at least one platform");
  if (std::set<std::string>(v.platforms.begin(), v.platforms.end()).size() != v.platforms.size()) {
    return Status::invalid_argument("a model version lists a platform twice");
  }
  if (options.make_production_if_unset) {
    if (Status s = check_actor(options.actor); !s) return s;
  }
  for (const AliasUpdate& a : options.aliases) {
    if (Status s = check_alias_name(a.alias); !s) return s;
    if (Status s = check_actor(a.actor); !s) return s;
  }
  // Hashed outside the retried body: once, whatever happens to the connection.
  const std::string weights_sha256 = sha256_hex(v.weights);
  const std::string fisher_sha256 = v.fisher ? sha256_hex(*v.fisher) : std::string();
  const pqxx::binarystring weights(v.weights);
  const pqxx::binarystring fisher(v.fisher ? *v.fisher : std::string());
  const std::string platforms = json_string_array(v.platforms);
  const std::string parent = v.parent ? std::to_string(*v.parent) : std::string();

  return internal::with_transaction(pool_, "creating a model version", [&](pqxx::work& tx) -> Result<VersionInfo> {
    if (options.job) {
      auto done = lock_job(tx, *options.job);
      if (!done) return done.status();
      if (*done) return read_version(tx, **done);  // a retry: the first call's version, nothing new
    }
    const pqxx::result unknown = tx.exec_params(
        "SELECT t.name FROM jsonb_array_elements_text($1::jsonb) AS t(name) "
        "WHERE NOT EXISTS (SELECT 1 FROM platforms p WHERE p.name = t.name) LIMIT 1",
        platforms);
    if (!unknown.empty()) return Status::not_found("platform '" + unknown[0][0].as<std::string>() + "' does not exist");
    if (v.parent && !version_exists(tx, *v.parent)) {
      return Status::not_found("parent " + version_name(*v.parent) + " does not exist");
    }

    // One statement: the row appears with all its bytes or not at all.
    const std::int64_t version = tx.exec_params1(R"sql(
INSERT INTO model_versions (parent, platforms, weights, weights_sha256, fisher, fisher_sha256,
                            config, metrics, training_summary, status)
VALUES (nullif($1, '')::bigint, ARRAY(SELECT jsonb_array_elements_text($2::jsonb)), $3::bytea, $4,
        CASE WHEN $5::boolean THEN $6::bytea END, nullif($7, ''),
        coalesce(nullif($8, ''), '{}')::jsonb, coalesce(nullif($9, ''), '{}')::jsonb,
        coalesce(nullif($10, ''), '{}')::jsonb, $11)
RETURNING version
)sql",
                                                 parent, platforms, weights, weights_sha256, v.fisher.has_value(),
                                                 fisher, fisher_sha256, v.config_json, v.metrics_json,
                                                 v.training_summary_json, std::string(version_status_name(v.status)))[0]
                                     .as<std::int64_t>();

    if (Status s = publish_version(tx, version, v.status, options); !s) return s;
    return read_version(tx, version);
  });
}

Result<VersionInfo> ModelStore::get(std::int64_t version) {
  return internal::with_transaction(pool_, "reading " + version_name(version),
                                    [&](pqxx::work& tx) -> Result<VersionInfo> { return read_version(tx, version); });
}

Result<Blob> ModelStore::weights(std::int64_t version) { return read_blob(version, /*fisher=*/false); }

Result<Blob> ModelStore::fisher(std::int64_t version) { return read_blob(version, /*fisher=*/true); }

Result<Blob> ModelStore::read_blob(std::int64_t version, bool fisher) {
  const std::string what_bytes = fisher ? "Fisher information" : "weights";
  const std::string what = "reading the " + what_bytes + " of " + version_name(version);
  return internal::with_transaction(pool_, what, [&](pqxx::work& tx) -> Result<Blob> {
    const pqxx::result r =
        tx.exec_params(fisher ? "SELECT fisher, fisher_sha256 FROM model_versions WHERE version = $1"
                              : "SELECT weights, weights_sha256 FROM model_versions WHERE version = $1",
                       version);
    if (r.empty()) return Status::not_found(version_name(version) + " does not exist");
    if (r[0][0].is_null()) return Status::not_found(version_name(version) + " has no " + what_bytes);
    Blob blob;
    blob.bytes = pqxx::binarystring(r[0][0]).str();
    blob.sha256 = r[0][1].as<std::string>();
    const std::string actual = sha256_hex(blob.bytes);
    if (actual != blob.sha256) {
      return Status::data_loss("the " + what_bytes + " of " + version_name(version) + " (" +
                               std::to_string(blob.bytes.size()) + " bytes) hash to " + actual +
                               " but the stored sha256 is " + blob.sha256);
    }
    return blob;
  });
}

Result<std::vector<VersionInfo>> ModelStore::lineage() {
  return internal::with_transaction(
      pool_, "reading the lineage", [&](pqxx::work& tx) -> Result<std::vector<VersionInfo>> {
        std::vector<VersionInfo> out;
        for (const pqxx::row& row :
             tx.exec(std::string("SELECT ") + kVersionColumns + " FROM model_versions mv ORDER BY mv.version")) {
          auto v = row_to_version(row);
          if (!v) return v.status();
          out.push_back(std::move(*v));
        }
        return out;
      });
}

Result<std::vector<VersionInfo>> ModelStore::lineage_summary(const SummaryParts& parts) {
  return internal::with_transaction(
      pool_, "reading the lineage", [&](pqxx::work& tx) -> Result<std::vector<VersionInfo>> {
        std::vector<VersionInfo> out;
        const std::string sql = "SELECT " + summary_columns(parts) + " FROM model_versions mv ORDER BY mv.version";
        const pqxx::result rows = parts.metrics && !parts.metrics_for.empty()
                                      ? tx.exec_params(sql, json_string_array(parts.metrics_for))
                                      : tx.exec(sql);
        for (const pqxx::row& row : rows) {
          auto v = row_to_version(row);
          if (!v) return v.status();
          v->trained_on = row[15].as<std::string>();
          out.push_back(std::move(*v));
        }
        return out;
      });
}

Status ModelStore::set_status(std::int64_t version, VersionStatus status, std::string_view reasons_json) {
  const std::string what = "setting the status of " + version_name(version);
  return internal::with_transaction(pool_, what, [&](pqxx::work& tx) -> Status {
    const pqxx::result r = tx.exec_params(
        "UPDATE model_versions SET status = $2, status_reasons = coalesce(nullif($3, ''), '{}')::jsonb, "
        "status_changed_at = now() WHERE version = $1",
        version, std::string(version_status_name(status)), std::string(reasons_json));
    if (r.affected_rows() == 0) return Status::not_found(version_name(version) + " does not exist");
    return Status::ok();
  });
}

Result<std::int64_t> ModelStore::resolve(std::string_view alias_or_version) {
  const std::string name(alias_or_version);
  const bool digits =
      !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) {
    if (!is_valid_alias_name(name)) return Status::not_found("no model version or alias named '" + name + "'");
    auto alias = get_alias(name);
    if (!alias) return alias.status();
    return alias->version;
  }
  std::int64_t version = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), version);
  if (ec != std::errc() || end != name.data() + name.size()) {
    return Status::not_found("model version " + name + " does not exist");
  }
  return internal::with_transaction(pool_, "resolving '" + name + "'", [&](pqxx::work& tx) -> Result<std::int64_t> {
    if (!version_exists(tx, version)) return Status::not_found(version_name(version) + " does not exist");
    return version;
  });
}

Result<Alias> ModelStore::get_alias(std::string_view name) {
  const std::string alias(name);
  return internal::with_transaction(pool_, "reading alias '" + alias + "'",
                                    [&](pqxx::work& tx) -> Result<Alias> { return read_alias(tx, alias); });
}

Result<std::vector<Alias>> ModelStore::list_aliases() {
  return internal::with_transaction(pool_, "listing aliases", [&](pqxx::work& tx) -> Result<std::vector<Alias>> {
    std::vector<Alias> out;
    for (const pqxx::row& row : tx.exec(std::string("SELECT ") + kAliasColumns + " FROM aliases ORDER BY name")) {
      out.push_back(row_to_alias(row));
    }
    return out;
  });
}

Result<SetAliasResult> ModelStore::set_alias(std::string_view name, std::int64_t version, std::string_view actor,
                                             std::string_view reason) {
  const std::string alias(name);
  if (Status s = check_alias_name(alias); !s) return s;
  if (Status s = check_actor(actor); !s) return s;
  const std::string actor_text(actor);
  const std::string reason_text(reason);
  const std::string what = "moving alias '" + alias + "' to " + version_name(version);
  return internal::with_transaction(pool_, what, [&](pqxx::work& tx) -> Result<SetAliasResult> {
    if (!version_exists(tx, version)) return Status::not_found(version_name(version) + " does not exist");
    return move_alias(tx, alias, version, actor_text, reason_text);
  });
}

Result<std::vector<AliasMove>> ModelStore::alias_history(std::string_view name) {
  const std::string alias(name);
  return internal::with_transaction(
      pool_, "reading the history of alias '" + alias + "'", [&](pqxx::work& tx) -> Result<std::vector<AliasMove>> {
        if (auto a = read_alias(tx, alias); !a) return a.status();
        std::vector<AliasMove> out;
        for (const pqxx::row& row : tx.exec_params(
                 std::string("SELECT ") + kMoveColumns + " FROM alias_history WHERE alias = $1 ORDER BY id", alias)) {
          out.push_back(row_to_move(row));
        }
        return out;
      });
}

}  // namespace tcl::registry
