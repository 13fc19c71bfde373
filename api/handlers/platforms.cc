#include "api/handlers/platforms.h"

#include <boost/json.hpp>

#include "api/http_error.h"
#include "api/json_body.h"
#include "onboarding/onboarding_state.h"

namespace tcl::api {
namespace json = boost::json;

bool valid_platform_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  auto lower_or_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_or_digit(name[0])) return false;
  for (char c : name.substr(1)) {
    if (!lower_or_digit(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

namespace {

json::object platform_json(const registry::PlatformRow& p, bool with_counts) {
  json::array hw;
  for (std::int64_t v : p.hardware_params) hw.push_back(v);
  json::object o{{"name", p.name},
                 {"target", p.target},
                 {"hardware_params", std::move(hw)},
                 {"description", p.description},
                 {"created_at", p.created_at}};
  if (with_counts) {
    o["counts"] = json::object{{"programs", p.counts.programs},
                               {"tasks", p.counts.tasks},
                               {"measurements", p.counts.measurements},
                               {"failed", p.counts.failed},
                               {"candidates", p.counts.candidates}};
    o["onboarding"] = json::object{{"state", onboarding::onboarding_state(p.counts)}};
  }
  return o;
}

Response invalid_field(const Status& s) {
  const std::string& field = s.field();
  return error_response(s, field.empty() ? json::value(nullptr) : json::value(json::object{{"field", field}}));
}

Result<registry::NewPlatform> parse_new_platform(std::string_view body) {
  auto obj = parse_json_object(body);
  if (!obj) return obj.status();
  registry::NewPlatform p;
  auto name = required_string(*obj, "name");
  if (!name) return name.status();
  if (!valid_platform_name(*name)) {
    return Status::invalid_field("name", "must match [a-z0-9][a-z0-9._-]{0,63}, got '" + *name + "'");
  }
  p.name = std::move(*name);
  auto target = required_string(*obj, "target");
  if (!target) return target.status();
  if (target->empty()) return Status::invalid_field("target", "must not be empty");
  p.target = std::move(*target);
  const json::value* hw = obj->if_contains("hardware_params");
  if (hw == nullptr) return Status::invalid_field("hardware_params", "is required");
  if (!hw->is_array() || hw->as_array().size() != 8) {
    return Status::invalid_field("hardware_params", "must be an array of 8 integers");
  }
  for (std::size_t i = 0; i < 8; ++i) {
    const json::value& v = hw->as_array()[i];
    if (!v.is_int64() && !v.is_uint64()) {
      return Status::invalid_field("hardware_params",
                                   "must be an array of 8 integers (item " + std::to_string(i) + " is not an integer)");
    }
    const std::int64_t x = v.is_int64() ? v.as_int64() : static_cast<std::int64_t>(v.as_uint64());
    if (x < -1) {  // TVM writes -1 for a parameter it does not know (num_cores of a GPU)
      return Status::invalid_field("hardware_params", "item " + std::to_string(i) + " must be >= 0, or -1 for unknown");
    }
    p.hardware_params[i] = x;
  }
  auto description = optional_string(*obj, "description");
  if (!description) return description.status();
  p.description = description->value_or("");
  for (const auto& [key, value] : *obj) {
    if (key != "name" && key != "target" && key != "hardware_params" && key != "description") {
      return Status::invalid_field(std::string_view(key.data(), key.size()), "is not a platform field");
    }
  }
  return p;
}

}  // namespace

Status check_platform_name(const std::string& name) {
  if (valid_platform_name(name)) return Status::ok();
  return Status::not_found("platform '" + name + "' does not exist");
}

Result<registry::PlatformRow> find_platform(registry::PlatformStore& platforms, const std::string& name) {
  if (Status s = check_platform_name(name); !s) return s;
  return platforms.find(name);
}

Result<registry::PlatformRow> get_platform(registry::PlatformStore& platforms, const std::string& name) {
  if (Status s = check_platform_name(name); !s) return s;
  return platforms.get(name);
}

Response handle_create_platform(const Request& req, registry::PlatformStore& platforms) {
  auto in = parse_new_platform(req.body());
  if (!in) return invalid_field(in.status());
  auto created = platforms.create(*in);
  if (!created) return error_response(created.status());
  Response res = json_response(http::status::created, platform_json(*created, false));
  res.headers["Location"] = "/v1/platforms/" + created->name;
  return res;
}

Response handle_list_platforms(const Request& req, registry::PlatformStore& platforms) {
  const auto with = req.query.find("with");
  if (with != req.query.end() && with->second != "counts") {
    return invalid_field(Status::invalid_field("with", "must be \"counts\", got '" + with->second + "'"));
  }
  const bool counts = with != req.query.end();
  auto all = platforms.list(counts);
  if (!all) return error_response(all.status());
  json::array items;
  for (const auto& p : *all) items.push_back(platform_json(p, counts));
  return json_response(http::status::ok, json::object{{"platforms", std::move(items)}});
}

Response handle_get_platform(const Request& req, registry::PlatformStore& platforms) {
  auto p = get_platform(platforms, req.param("name"));
  if (!p) return error_response(p.status());
  return json_response(http::status::ok, platform_json(*p, true));
}

void add_platform_routes(Router& router, registry::PlatformStore& platforms) {
  router.add(
      http::verb::post, "/v1/platforms",
      [&platforms](const Request& req) { return handle_create_platform(req, platforms); },
      RouteOptions{Access::kWrite, std::size_t{64 << 10}});
  router.add(http::verb::get, "/v1/platforms",
             [&platforms](const Request& req) { return handle_list_platforms(req, platforms); });
  router.add(http::verb::get, "/v1/platforms/{name}",
             [&platforms](const Request& req) { return handle_get_platform(req, platforms); });
}

}  // namespace tcl::api
