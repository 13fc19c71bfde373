#include "api/handlers/tuning_runs.h"

#include <boost/json.hpp>

#include <cmath>
#include <string>

#include "api/handlers/platforms.h"
#include "api/http_error.h"
#include "api/json_body.h"

namespace tcl::api {
namespace json = boost::json;
namespace {

constexpr std::size_t kMaxNameBytes = 256;

json::object run_json(const std::string& platform, const registry::TuningRun& run) {
  json::array rounds;
  rounds.reserve(run.rounds.size());
  for (const registry::TuningRound& r : run.rounds) {
    rounds.emplace_back(
        json::object{{"measured", r.measured},
                     {"network_seconds", r.network_seconds ? json::value(*r.network_seconds) : json::value(nullptr)},
                     {"wall_seconds", r.wall_seconds}});
  }
  return json::object{{"id", run.id},
                      {"platform", platform},
                      {"network", run.network},
                      {"model", run.model},
                      {"seed", run.seed},
                      {"rounds", std::move(rounds)},
                      {"created_at", run.created_at},
                      {"updated_at", run.updated_at}};
}

Result<std::string> short_string(const json::object& o, std::string_view field) {
  auto s = required_string(o, field);
  if (!s) return s.status();
  if (s->empty() || s->size() > kMaxNameBytes) {
    return Status::invalid_field(std::string(field), "must be 1 to 256 bytes");
  }
  return s;
}

// A finite number ≥ 0; `nullable`: null reads as nullopt.
Result<std::optional<double>> seconds(const json::object& o, const std::string& field, bool nullable) {
  const json::value* v = o.if_contains(field.substr(field.rfind('.') + 1));
  if (v == nullptr || (v->is_null() && !nullable)) return Status::invalid_field(field, "is required");
  if (v->is_null()) return std::optional<double>{};
  if (!v->is_number() || !std::isfinite(v->to_number<double>()) || v->to_number<double>() < 0) {
    return Status::invalid_field(field, nullable ? "must be a number ≥ 0 or null" : "must be a number ≥ 0");
  }
  return std::optional<double>(v->to_number<double>());
}

Result<registry::TuningRound> parse_round(const json::value& v, std::size_t i) {
  const std::string at = "rounds[" + std::to_string(i) + "]";
  if (!v.is_object()) return Status::invalid_field(at, "must be an object");
  const json::object& o = v.as_object();
  registry::TuningRound r;
  const json::value* measured = o.if_contains("measured");
  if (measured == nullptr || !measured->is_int64() || measured->as_int64() < 0) {
    return Status::invalid_field(at + ".measured", "must be an integer ≥ 0");
  }
  r.measured = measured->as_int64();
  auto network = seconds(o, at + ".network_seconds", true);
  if (!network) return network.status();
  r.network_seconds = *network;
  auto wall = seconds(o, at + ".wall_seconds", false);
  if (!wall) return wall.status();
  r.wall_seconds = **wall;
  return r;
}

Result<registry::TuningRun> parse_tuning_run(std::string_view body) {
  auto obj = parse_json_object(body, JsonLimits{.max_array_items = kMaxTuningRounds});
  if (!obj) return obj.status();
  registry::TuningRun run;
  auto network = short_string(*obj, "network");
  if (!network) return network.status();
  run.network = std::move(*network);
  auto model = short_string(*obj, "model");
  if (!model) return model.status();
  run.model = std::move(*model);
  auto seed = optional_int(*obj, "seed");
  if (!seed) return seed.status();
  if (!*seed || **seed < 0) return Status::invalid_field("seed", "must be an integer ≥ 0");
  run.seed = **seed;
  const json::value* rounds = obj->if_contains("rounds");
  if (rounds == nullptr || !rounds->is_array()) return Status::invalid_field("rounds", "must be an array");
  for (std::size_t i = 0; i < rounds->as_array().size(); ++i) {
    auto r = parse_round(rounds->as_array()[i], i);
    if (!r) return r.status();
    run.rounds.push_back(*r);
  }
  return run;
}

}  // namespace

Response handle_put_tuning_run(const Request& req, registry::PlatformStore& platforms, registry::TuningRunStore& runs) {
  const std::string& name = req.param("name");
  if (Status s = check_platform_name(name); !s) return error_response(s);
  const std::string& id = req.param("run_id");
  if (!registry::is_valid_tuning_run_id(id)) {
    return error_response(
        Status::invalid_field("run_id", "must match [A-Za-z0-9][A-Za-z0-9._-]{0,127}, got '" + id + "'"));
  }
  auto run = parse_tuning_run(req.body());
  if (!run) return error_response(run.status());
  run->id = id;
  auto platform = find_platform(platforms, name);
  if (!platform) return error_response(platform.status());
  bool created = false;
  auto stored = runs.put(platform->id, *run, &created);
  if (!stored) return error_response(stored.status());
  Response res = json_response(created ? http::status::created : http::status::ok, run_json(name, *stored));
  if (created) res.headers["Location"] = "/v1/platforms/" + name + "/tuning-runs/" + id;
  return res;
}

Response handle_list_tuning_runs(const Request& req, registry::PlatformStore& platforms,
                                 registry::TuningRunStore& runs) {
  auto platform = find_platform(platforms, req.param("name"));
  if (!platform) return error_response(platform.status());
  auto all = runs.list(platform->id);
  if (!all) return error_response(all.status());
  json::array items;
  for (const registry::TuningRun& r : *all) items.push_back(run_json(platform->name, r));
  return json_response(http::status::ok, json::object{{"runs", std::move(items)}});
}

void add_tuning_run_routes(Router& router, registry::PlatformStore& platforms, registry::TuningRunStore& runs) {
  router.add(
      http::verb::put, "/v1/platforms/{name}/tuning-runs/{run_id}",
      [&platforms, &runs](const Request& req) { return handle_put_tuning_run(req, platforms, runs); },
      RouteOptions{Access::kWrite, kTuningRunBodyLimit});
  router.add(http::verb::get, "/v1/platforms/{name}/tuning-runs",
             [&platforms, &runs](const Request& req) { return handle_list_tuning_runs(req, platforms, runs); });
}

}  // namespace tcl::api
