#include "api/handlers/models.h"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <bitset>
#include <cmath>
#include <string_view>

#include "api/handlers/platforms.h"
#include "api/http_error.h"
#include "api/json_body.h"
#include "api/stored_json.h"

namespace tcl::api {
namespace json = boost::json;

namespace {

// Per platform, which model serves it and why ("serving"): what a best-of
// distill wrote in the version's config (onboarding/best_of.h), else what
// the version's kind says. A train job's model and the student method's
// serve every platform alone; an adapter distill serves its new platform
// (the last of its platforms) with the adapter and every other with the
// parent's model of it.
json::value serving_json(const registry::VersionInfo& v, const json::value& config) {
  const json::object* c = config.if_object();
  if (c != nullptr) {
    if (const json::value* serving = c->if_contains("serving"); serving != nullptr && serving->is_object()) {
      return *serving;
    }
  }
  std::string method;
  if (c != nullptr) {
    if (const json::value* d = c->if_contains("distill"); d != nullptr && d->is_object()) {
      if (const json::value* m = d->as_object().if_contains("method"); m != nullptr && m->is_string()) {
        method = m->as_string().c_str();
      }
    }
  }
  json::object out;
  for (std::size_t i = 0; i < v.platforms.size(); ++i) {
    const std::string& p = v.platforms[i];
    const bool fresh = i + 1 == v.platforms.size();
    if (method == "adapter" && !fresh) {
      json::object o{{"model", "parent's"},
                     {"origin", "the parent's model of the platform"},
                     {"reason", "an adapter distill keeps every old platform's model as the parent had it"}};
      if (v.parent) o["from_version"] = *v.parent;
      out[p] = std::move(o);
    } else if (method == "adapter") {
      out[p] = json::object{{"model", "adapter"},
                            {"origin", "adapter on the parent's trunk"},
                            {"reason", "an adapter distill trains one adapter for its platform"}};
    } else {
      out[p] = json::object{{"model", "student"},
                            {"origin", method == "student" ? "the distilled student" : "the version's model"},
                            {"reason", "one model serves every platform of this version"}};
    }
  }
  return out;
}

// The keys of a version's JSON; `fields` picks among them (trained_on: the summary view only).
constexpr std::array<std::string_view, 15> kVersionFields{
    "version",        "parent",       "platforms",  "status",     "status_reasons",
    "aliases",        "metrics",      "config",     "serving",    "training_summary",
    "weights_sha256", "weights_size", "has_fisher", "created_at", "trained_on"};
using FieldSet = std::bitset<kVersionFields.size()>;

std::size_t field_index(std::string_view name) {
  return static_cast<std::size_t>(std::find(kVersionFields.begin(), kVersionFields.end(), name) -
                                  kVersionFields.begin());
}

// ?fields=a,b,c → the keys asked for ("version" always); every key when absent. kInvalidArgument
// naming "fields" for an unknown or empty name.
Result<FieldSet> parse_fields(const Request& req, bool summary) {
  FieldSet out;
  const auto it = req.query.find("fields");
  if (it == req.query.end()) {
    out.set();
    if (!summary) out.reset(field_index("trained_on"));
    return out;
  }
  out.set(field_index("version"));
  std::string_view rest = it->second;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    const std::size_t i = field_index(name);
    if (i == kVersionFields.size() || (!summary && name == "trained_on")) {
      return Status::invalid_field("fields", "'" + std::string(name) + "' is not a field of a version" +
                                                 (name == "trained_on" ? " outside view=summary" : ""));
    }
    out.set(i);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

// ?metrics_for=a,b (view=summary only) → those platform names; none when absent. kInvalidArgument
// naming "metrics_for" for a name that is not a platform name, or outside the summary.
Result<std::vector<std::string>> parse_metrics_for(const Request& req, bool summary) {
  const auto it = req.query.find("metrics_for");
  if (it == req.query.end()) return std::vector<std::string>{};
  if (!summary) return Status::invalid_field("metrics_for", "is for view=summary only");
  std::vector<std::string> out;
  std::string_view rest = it->second;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string name(rest.substr(0, comma));
    if (!valid_platform_name(name)) {
      return Status::invalid_field("metrics_for", "'" + name + "' is not a platform name");
    }
    out.push_back(name);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

// A summary's figures to 4 decimals (the console shows 3): a platform's figures and its standing
// split's. Integers stay as they are.
void round_figures(json::value& metrics) {
  const auto round_all = [](json::object& figures) {
    for (auto& [key, x] : figures) {
      if (x.is_double() && std::fabs(x.as_double()) < 1e9) x = std::round(x.as_double() * 1e4) / 1e4;
    }
  };
  if (!metrics.is_object()) return;
  for (auto& [platform, m] : metrics.as_object()) {
    if (!m.is_object()) continue;
    round_all(m.as_object());
    if (json::value* split = m.as_object().if_contains("standing_split"); split != nullptr && split->is_object()) {
      round_all(split->as_object());
    }
  }
}

json::object version_json(const registry::VersionInfo& v, const FieldSet& fields, bool summary) {
  json::object o;
  const auto want = [&](std::string_view key) { return fields.test(field_index(key)); };
  const auto string_array = [](const std::vector<std::string>& items) {
    json::array a;
    for (const auto& s : items) a.push_back(json::string(s));
    return a;
  };
  o["version"] = v.version;
  if (want("parent")) o["parent"] = v.parent ? json::value(*v.parent) : json::value(nullptr);
  if (want("platforms")) o["platforms"] = string_array(v.platforms);
  if (want("status")) o["status"] = registry::version_status_name(v.status);
  if (want("status_reasons")) o["status_reasons"] = embedded_json(v.status_reasons_json);
  if (want("aliases")) o["aliases"] = string_array(v.aliases);
  if (want("metrics")) {
    json::value metrics = embedded_json(v.metrics_json);
    if (summary) round_figures(metrics);
    o["metrics"] = std::move(metrics);
  }
  if (want("config") || want("serving")) {
    json::value config = embedded_json(v.config_json);
    if (want("serving")) o["serving"] = serving_json(v, config);
    if (want("config")) o["config"] = std::move(config);
  }
  if (want("training_summary")) o["training_summary"] = embedded_json(v.training_summary_json);
  if (want("weights_sha256")) o["weights_sha256"] = v.weights_sha256;
  if (want("weights_size")) o["weights_size"] = v.weights_size;
  if (want("has_fisher")) o["has_fisher"] = v.fisher_sha256.has_value();
  if (want("created_at")) o["created_at"] = v.created_at;
  if (want("trained_on")) o["trained_on"] = v.trained_on.empty() ? json::value(nullptr) : json::value(v.trained_on);
  return o;
}

json::object version_json(const registry::VersionInfo& v) {
  FieldSet all;
  all.set();
  all.reset(field_index("trained_on"));
  return version_json(v, all, false);
}

// The schema allows a leading digit, but /v1/models/{version} reads a name of
// digits as a version number: such an alias could never be reached. New
// aliases therefore start with a letter.
bool valid_new_alias_name(const std::string& name) {
  return !name.empty() && name[0] >= 'a' && name[0] <= 'z' && registry::is_valid_alias_name(name);
}

json::object move_json(const registry::AliasMove& m) {
  return json::object{{"alias", m.alias},
                      {"from_version", m.from_version ? json::value(*m.from_version) : json::value(nullptr)},
                      {"to_version", m.to_version},
                      {"actor", m.actor},
                      {"reason", m.reason},
                      {"moved_at", m.moved_at}};
}

}  // namespace

Response handle_list_models(const Request& req, registry::ModelStore& models) {
  const auto view = req.query.find("view");
  if (view != req.query.end() && view->second != "full" && view->second != "summary") {
    return error_response(Status::invalid_field("view", "must be \"full\" or \"summary\", got '" + view->second + "'"),
                          json::object{{"field", "view"}});
  }
  const bool summary = view != req.query.end() && view->second == "summary";
  auto fields = parse_fields(req, summary);
  if (!fields) return error_response(fields.status(), json::object{{"field", "fields"}});
  auto metrics_for = parse_metrics_for(req, summary);
  if (!metrics_for) return error_response(metrics_for.status(), json::object{{"field", "metrics_for"}});
  const registry::SummaryParts parts{.metrics = fields->test(field_index("metrics")),
                                     .status_reasons = fields->test(field_index("status_reasons")),
                                     .metrics_for = std::move(*metrics_for)};
  auto all = summary ? models.lineage_summary(parts) : models.lineage();
  if (!all) return error_response(all.status());
  json::array versions;
  versions.reserve(all->size());
  for (const auto& v : *all) versions.push_back(version_json(v, *fields, summary));
  return json_response(http::status::ok, json::object{{"versions", std::move(versions)}});
}

Response handle_get_model(const Request& req, registry::ModelStore& models) {
  auto id = models.resolve(req.param("version"));
  if (!id) return error_response(id.status());
  auto v = models.get(*id);
  if (!v) return error_response(v.status());
  return json_response(http::status::ok, version_json(*v));
}

Response handle_get_model_weights(const Request& req, registry::ModelStore& models) {
  auto id = models.resolve(req.param("version"));
  if (!id) return error_response(id.status());
  auto blob = models.weights(*id);
  if (!blob) return error_response(blob.status());
  Response res;
  res.content_type = "application/octet-stream";
  res.body = std::move(blob->bytes);
  res.headers["ETag"] = "\"" + blob->sha256 + "\"";
  res.headers["X-Weights-SHA256"] = blob->sha256;
  res.headers["Content-Disposition"] = "attachment; filename=\"tcl-v" + std::to_string(*id) + ".pt\"";
  return res;
}

Response handle_get_alias(const Request& req, registry::ModelStore& models) {
  auto a = models.get_alias(req.param("alias"));
  if (!a) return error_response(a.status());
  return json_response(http::status::ok,
                       json::object{{"alias", a->name}, {"version", a->version}, {"updated_at", a->updated_at}});
}

Response handle_put_alias(const Request& req, registry::ModelStore& models) {
  const std::string& name = req.param("alias");
  if (!valid_new_alias_name(name)) {
    return error_response(Status::invalid_argument("alias names start with a letter and match "
                                                   "[a-z][a-z0-9._-]{0,63} (a name of digits would "
                                                   "read as a version number)"),
                          json::object{{"field", "alias"}});
  }
  auto body = parse_json_object(req.body());
  if (!body) return error_response(body.status());
  auto version = optional_int(*body, "version");
  if (!version) return error_response(version.status(), json::object{{"field", "version"}});
  if (!*version) {
    return error_response(Status::invalid_argument("field 'version' is required"), json::object{{"field", "version"}});
  }
  auto reason = optional_string(*body, "reason");
  if (!reason) return error_response(reason.status(), json::object{{"field", "reason"}});
  const std::string actor = req.principal ? req.principal->name : "unknown";
  auto moved = models.set_alias(name, **version, actor, reason->value_or("moved by hand"));
  if (!moved) return error_response(moved.status());
  json::object out{{"alias", moved->alias.name},
                   {"version", moved->alias.version},
                   {"updated_at", moved->alias.updated_at},
                   {"changed", moved->changed}};
  if (moved->move) out["move"] = move_json(*moved->move);
  return json_response(http::status::ok, out);
}

Response handle_alias_history(const Request& req, registry::ModelStore& models) {
  auto h = models.alias_history(req.param("alias"));
  if (!h) return error_response(h.status());
  json::array moves;
  for (const auto& m : *h) moves.push_back(move_json(m));
  return json_response(http::status::ok, json::object{{"alias", req.param("alias")}, {"history", std::move(moves)}});
}

void add_model_routes(Router& router, registry::ModelStore& models) {
  const auto route = [&models](Response (*handle)(const Request&, registry::ModelStore&)) {
    return [&models, handle](const Request& req) { return handle(req, models); };
  };
  router.add(http::verb::get, "/v1/models", route(handle_list_models));
  router.add(http::verb::get, "/v1/models/{version}", route(handle_get_model));
  router.add(http::verb::get, "/v1/models/{version}/weights", route(handle_get_model_weights));
  router.add(http::verb::get, "/v1/aliases/{alias}", route(handle_get_alias));
  router.add(http::verb::put, "/v1/aliases/{alias}", route(handle_put_alias),
             RouteOptions{Access::kAdmin, std::size_t{16 << 10}});
  router.add(http::verb::get, "/v1/aliases/{alias}/history", route(handle_alias_history));
}

}  // namespace tcl::api
