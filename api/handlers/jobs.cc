#include "api/handlers/jobs.h"

#include <boost/json.hpp>

#include <charconv>

#include "api/handlers/platforms.h"
#include "api/http_error.h"
#include "api/json_body.h"
#include "api/stored_json.h"
#include "onboarding/job_options.h"

namespace tcl::api {
namespace json = boost::json;

namespace {

json::value text_or_null(const std::string& s) { return s.empty() ? json::value(nullptr) : json::value(s); }

json::object job_json(const registry::Job& j) {
  return json::object{{"id", j.id},
                      {"kind", registry::job_kind_name(j.kind)},
                      {"platform", j.platform},
                      {"state", registry::job_state_name(j.state)},
                      {"cancel_requested", j.cancel_requested},
                      {"options", embedded_json(j.options_json)},
                      {"progress", embedded_json(j.progress_json)},
                      {"error", text_or_null(j.error)},
                      {"result_version", j.result_version ? json::value(*j.result_version) : json::value(nullptr)},
                      {"attempts", j.attempts},
                      {"max_attempts", j.max_attempts},
                      {"worker", text_or_null(j.worker)},
                      {"created_at", j.created_at},
                      {"started_at", text_or_null(j.started_at)},
                      {"heartbeat_at", text_or_null(j.heartbeat_at)},
                      {"finished_at", text_or_null(j.finished_at)}};
}

Result<std::int64_t> job_id(const Request& req) {
  const std::string& s = req.param("id");
  std::int64_t id = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (ec != std::errc() || end != s.data() + s.size() || id <= 0) {
    return Status::not_found("job '" + s + "' does not exist");
  }
  return id;
}

}  // namespace

Response handle_list_jobs(const Request&, registry::JobQueue& jobs) {
  auto list = jobs.list(std::nullopt, 100);
  if (!list) return error_response(list.status());
  json::array items;
  for (const auto& j : *list) items.push_back(job_json(j));
  return json_response(http::status::ok, json::object{{"jobs", std::move(items)}});
}

void add_job_routes(Router& router, registry::PlatformStore& platforms, registry::JobQueue& jobs) {
  router.add(
      http::verb::post, "/v1/platforms/{name}/jobs",
      [&platforms, &jobs](const Request& req) {
        const std::string& name = req.param("name");
        if (Status s = check_platform_name(name); !s) return error_response(s);
        auto body = parse_json_object(req.body());
        if (!body) return error_response(body.status());
        auto kind_text = required_string(*body, "kind");
        if (!kind_text) return error_response(kind_text.status(), json::object{{"field", "kind"}});
        const auto kind = registry::parse_job_kind(*kind_text);
        if (!kind) {
          return error_response(Status::invalid_argument("field 'kind' must be \"train\" or \"distill\""),
                                json::object{{"field", "kind"}});
        }
        auto platform = find_platform(platforms, name);
        if (!platform) return error_response(platform.status());
        json::object options = *body;
        options.erase("kind");
        // Bad options fail here, before a job exists (the worker reads them again).
        auto checked = onboarding::parse_job_options(json::serialize(options), *kind);
        if (!checked) return error_response(checked.status());
        // A distill's method is stored as resolved, so that the job runs as
        // queued whatever a later build's default is.
        if (*kind == registry::JobKind::kDistill) {
          if (!options.contains("method")) options["method"] = onboarding::distill_method_name(checked->method);
          if (checked->method == onboarding::JobOptions::DistillMethod::kBestOf && !options.contains("choice")) {
            options["choice"] = onboarding::choice_name(checked->choice);
          }
        }
        auto job = jobs.enqueue(platform->id, *kind, json::serialize(options));
        if (!job) return error_response(job.status());
        Response res = json_response(http::status::accepted, job_json(*job));
        res.headers["Location"] = "/v1/jobs/" + std::to_string(job->id);
        return res;
      },
      RouteOptions{Access::kWrite, std::size_t{64 << 10}});

  router.add(http::verb::get, "/v1/platforms/{name}/jobs", [&platforms, &jobs](const Request& req) {
    auto platform = find_platform(platforms, req.param("name"));
    if (!platform) return error_response(platform.status());
    auto list = jobs.list(platform->id, 100);
    if (!list) return error_response(list.status());
    json::array items;
    for (const auto& j : *list) items.push_back(job_json(j));
    return json_response(http::status::ok, json::object{{"jobs", std::move(items)}});
  });

  router.add(http::verb::get, "/v1/jobs", [&jobs](const Request& req) { return handle_list_jobs(req, jobs); });

  router.add(http::verb::get, "/v1/jobs/{id}", [&jobs](const Request& req) {
    auto id = job_id(req);
    if (!id) return error_response(id.status());
    auto job = jobs.get(*id);
    if (!job) return error_response(job.status());
    return json_response(http::status::ok, job_json(*job));
  });

  router.add(
      http::verb::post, "/v1/jobs/{id}/cancel",
      [&jobs](const Request& req) {
        auto id = job_id(req);
        if (!id) return error_response(id.status());
        auto job = jobs.cancel(*id);
        if (!job) return error_response(job.status());
        return json_response(http::status::ok, job_json(*job));
      },
      RouteOptions{Access::kWrite, std::size_t{1 << 10}});
}

}  // namespace tcl::api
