#include "api/handlers/sample_requests.h"

#include <spdlog/spdlog.h>

#include <prometheus/counter.h>
#include <prometheus/histogram.h>

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <unordered_set>
#include <utility>

#include "api/handlers/platforms.h"
#include "api/http_error.h"
#include "api/json_body.h"
#include "api/metrics.h"
#include "core/features.h"
#include "core/record.h"
#include "onboarding/registry_source.h"
#include "onboarding/round.h"
#include "sampler/rdu.h"
#include "trainer/pool_embedding.h"

namespace tcl::api {
namespace json = boost::json;

namespace {

using Descriptor = std::array<float, core::kHardwareDim>;

struct SampleParams {
  std::optional<std::int64_t> budget;
  std::optional<double> fraction;
  onboarding::RoundOptions round;  // strategy, weights, seed, min_per_task, random_share
  int mc_samples = 8;
  std::string model = "production";
};

Status bad(const std::string& field, const std::string& message) { return Status::invalid_field(field, message); }

Result<SampleParams> parse_params(const json::object& body) {
  static const std::unordered_set<std::string_view> known = {
      "budget", "fraction", "strategy", "weights", "seed", "model", "mc_samples", "min_per_task", "random_share"};
  for (const auto& kv : body) {
    if (!known.count(kv.key())) return bad(std::string(kv.key()), "is not a sample-request parameter");
  }
  SampleParams p;
  auto budget = optional_int(body, "budget");
  if (!budget) return budget.status();
  auto fraction = optional_number(body, "fraction");
  if (!fraction) return fraction.status();
  if (budget->has_value() == fraction->has_value()) {
    return Status::invalid_argument("give exactly one of 'budget' (a count) or 'fraction' (of the unmeasured pool)");
  }
  if (budget->has_value() && **budget < 1) return bad("budget", "must be at least 1");
  if (fraction->has_value() && !(**fraction > 0.0 && **fraction <= 1.0)) return bad("fraction", "must be in (0, 1]");
  p.budget = *budget;
  p.fraction = *fraction;
  auto strategy = optional_string(body, "strategy");
  if (!strategy) return strategy.status();
  if (strategy->has_value()) {
    auto s = sampler::parse_strategy(**strategy);
    if (!s) {
      return bad("strategy", "must be \"rdu\", \"random\", \"r\", \"d\", \"u\", \"fast\" or \"uniform\", got \"" +
                                 **strategy + "\"");
    }
    p.round.strategy = *s;
  }
  if (const json::value* w = body.if_contains("weights")) {
    if (!w->is_object()) return bad("weights", "must be an object {\"r\", \"d\", \"u\"}");
    for (const auto& kv : w->as_object()) {
      const std::string key(kv.key());
      if (key != "r" && key != "d" && key != "u") return bad("weights", "has an unknown key '" + key + "'");
      if (!kv.value().is_number()) return bad("weights." + key, "must be a number");
      const double x = kv.value().to_number<double>();
      if (!(x >= 0.0) || !std::isfinite(x)) return bad("weights." + key, "must be a finite number >= 0");
      (key == "r" ? p.round.weights.r : key == "d" ? p.round.weights.d : p.round.weights.u) = x;
    }
  }
  auto seed = optional_int(body, "seed");
  if (!seed) return seed.status();
  if (seed->has_value()) {
    if (**seed < 0) return bad("seed", "must be >= 0");
    p.round.seed = static_cast<std::uint64_t>(**seed);
  }
  auto mc = optional_int(body, "mc_samples");
  if (!mc) return mc.status();
  if (mc->has_value()) {
    if (**mc < 2 || **mc > 256) return bad("mc_samples", "must be in [2, 256]");
    p.mc_samples = static_cast<int>(**mc);
  }
  auto min_per_task = optional_int(body, "min_per_task");
  if (!min_per_task) return min_per_task.status();
  if (min_per_task->has_value()) {
    if (**min_per_task < 0 || **min_per_task > 1000) return bad("min_per_task", "must be in [0, 1000]");
    p.round.min_per_task = static_cast<int>(**min_per_task);
  }
  auto random_share = optional_number(body, "random_share");
  if (!random_share) return random_share.status();
  if (random_share->has_value()) {
    if (!(**random_share >= 0.0 && **random_share <= 1.0)) return bad("random_share", "must be in [0, 1]");
    p.round.random_share = **random_share;
  }
  auto model = optional_string(body, "model");
  if (!model) return model.status();
  if (model->has_value()) p.model = **model;
  return p;
}

json::value number_or_null(double v) { return std::isfinite(v) ? json::value(v) : json::value(nullptr); }

json::object request_json(const registry::SampleRequest& s) {
  boost::system::error_code ec;
  json::value params = json::parse(s.params_json, ec);
  return json::object{{"id", s.id},
                      {"platform", s.platform},
                      {"strategy", s.strategy},
                      {"params", ec ? json::value(json::object{}) : params},
                      {"model_version", s.model_version ? json::value(*s.model_version) : json::value(nullptr)},
                      {"status", s.status},
                      {"items_total", s.items},
                      {"items_measured", s.measured},
                      {"created_at", s.created_at},
                      {"completed_at", s.completed_at.empty() ? json::value(nullptr) : json::value(s.completed_at)}};
}

Result<std::int64_t> request_id(const Request& req) {
  const std::string& s = req.param("id");
  std::int64_t id = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (ec != std::errc() || end != s.data() + s.size() || id <= 0) {
    return Status::not_found("sample request '" + s + "' does not exist");
  }
  return id;
}

bool wants_ndjson(const Request& req) {
  return req.header("Accept").find("application/x-ndjson") != std::string_view::npos;
}

// The models a round scores with: none for random; else the student (the
// request's `model`, default production) and, when no model was named, the
// platform's active column once a fine-tuning job made one (alias
// active.<platform>; DESIGN §5 "Progress", §6).
struct Scorers {
  std::shared_ptr<const LoadedModel> student, column;
  onboarding::RoundModels models;
};

Result<Scorers> round_models(const SampleParams& params, bool model_named, const registry::PlatformRow& platform,
                             registry::PlatformStore& platforms, ModelCache& models) {
  Scorers s;
  if (!sampler::uses_model(params.round.strategy)) return s;
  auto m = models.get(params.model, platform.name);  // the platform's adapter, when the version keeps one
  if (!m) {
    if (m.status().code() != StatusCode::kNotFound) return m.status();
    return Status::failed_precondition("strategy '" + std::string(sampler::strategy_name(params.round.strategy)) +
                                       "' needs a model version ('" + params.model + "': " + m.status().message() +
                                       "); train one first or use \"random\"");
  }
  s.student = *m;
  if (!model_named) {
    if (auto a = models.get("active." + platform.name, platform.name); a) s.column = *a;
  }
  s.models.student = trainer::ServedModel{s.student->model.get(), s.student->fast.get()};
  if (s.column) s.models.column = trainer::ServedModel{s.column->model.get(), s.column->fast.get()};
  const Descriptor own = core::descriptor_of(registry::core_platform(platform));
  s.models.descriptor.assign(own.begin(), own.end());
  // Descriptors of the other platforms the version covers (round-1
  // uncertainty), scored with this platform's model: an adapted platform's
  // own adapter is not applied to them.
  for (const auto& other : s.student->platforms) {
    if (other == platform.name) continue;
    if (auto p = platforms.find(other); p) {
      const Descriptor d = core::descriptor_of(registry::core_platform(*p));
      s.models.others.emplace_back(d.begin(), d.end());
    }
  }
  return s;
}

struct RoundTimes {
  double embed = 0, select = 0;
};

// The request to store: the picks with their terms and the parameters as resolved.
registry::NewSampleRequest new_request(const SampleParams& params, const registry::PlatformRow& platform,
                                       const Scorers& scorers, const onboarding::Round& round,
                                       const RoundTimes& times) {
  const std::vector<sampler::Pick>& picks = round.picks;
  registry::NewSampleRequest nr;
  nr.platform_id = platform.id;
  nr.strategy = std::string(sampler::strategy_name(params.round.strategy));
  if (scorers.student) nr.model_version = scorers.column ? scorers.column->version : scorers.student->version;
  nr.items.reserve(picks.size());
  for (const auto& p : picks) {
    registry::SampleItem it;
    it.program_id = round.program_ids[static_cast<std::size_t>(p.index)];
    it.r = p.r;
    it.d = p.d;
    it.u = p.u;
    it.score = p.score;
    nr.items.push_back(std::move(it));
  }
  nr.params_json = json::serialize(json::object{
      {"budget", round.budget},
      {"fraction", params.fraction ? json::value(*params.fraction) : json::value(nullptr)},
      {"weights",
       json::object{{"r", params.round.weights.r}, {"d", params.round.weights.d}, {"u", params.round.weights.u}}},
      {"seed", params.round.seed},
      {"mc_samples", params.mc_samples},
      {"min_per_task", params.round.min_per_task},
      {"random_share", params.round.random_share},
      {"model", scorers.student ? json::value(params.model) : json::value(nullptr)},
      {"active_column", scorers.column ? json::value(scorers.column->version) : json::value(nullptr)},
      {"pool_size", static_cast<std::int64_t>(round.program_ids.size())},
      {"pool_tasks", round.task_keys.size()},
      {"measured_programs", round.measured},
      {"seconds", json::object{{"embed", times.embed}, {"select", times.select}}}});
  return nr;
}

// The answer's items: every pick with its record, in pick order.
Result<json::array> answer_items(registry::SampleStore& samples, std::int64_t id, const registry::NewSampleRequest& nr,
                                 const onboarding::Round& round) {
  const std::vector<sampler::Pick>& picks = round.picks;
  json::array items;
  items.reserve(picks.size());
  std::size_t k = 0;
  Status records = samples.for_each_record_to_measure(id, [&](const std::string& line) {
    if (k >= picks.size()) return;
    const auto& p = picks[k];
    boost::system::error_code ec;
    json::value rec = json::parse(line, ec);
    items.push_back(json::object{{"rank", k},
                                 {"program_id", nr.items[k].program_id},
                                 {"task", round.task_keys[static_cast<std::size_t>(p.task)]},
                                 {"r", number_or_null(p.r)},
                                 {"d", number_or_null(p.d)},
                                 {"u", number_or_null(p.u)},
                                 {"score", number_or_null(p.score)},
                                 {"record", ec ? json::value(line) : rec}});
    ++k;
  });
  if (!records) return records;
  return items;
}

// One of the max_concurrent places to compute a sample request; take() is
// empty when none is free (the request is answered 503, never queued).
class ComputeSlot {
 public:
  static std::optional<ComputeSlot> take(std::atomic<int>& in_use, int max) {
    if (in_use.fetch_add(1) >= max) {
      in_use.fetch_sub(1);
      return std::nullopt;
    }
    return ComputeSlot(in_use);
  }
  ComputeSlot(ComputeSlot&& o) noexcept : in_use_(std::exchange(o.in_use_, nullptr)) {}
  ComputeSlot(const ComputeSlot&) = delete;
  ComputeSlot& operator=(const ComputeSlot&) = delete;
  ComputeSlot& operator=(ComputeSlot&&) = delete;
  ~ComputeSlot() {
    if (in_use_ != nullptr) in_use_->fetch_sub(1);
  }

 private:
  explicit ComputeSlot(std::atomic<int>& in_use) : in_use_(&in_use) {}
  std::atomic<int>* in_use_;
};

Response busy_response(int max) {
  Response r =
      error_response(http::status::service_unavailable, "BUSY",
                     "all " + std::to_string(max) + " places for computing sample requests are taken; retry shortly");
  r.headers["Retry-After"] = "1";
  return r;
}

// The checks the pool's task sizes alone decide, from one aggregate and
// before any record is read or scored (the same answers the full pool would
// give; the sizes are a lower bound on its tasks, see pool_task_sizes).
// The budget for a pool of `n` unmeasured candidates, or why there is none
// (an empty pool, a budget larger than the pool).
std::optional<Response> refuse_budget(const std::string& name, const SampleParams& params, std::int64_t n,
                                      std::int64_t* budget) {
  if (n == 0) {
    return error_response(Status::invalid_argument("platform '" + name +
                                                   "' has no unmeasured candidates left: upload a pool first "
                                                   "(POST /v1/platforms/" +
                                                   name + "/candidates)"),
                          json::object{{"pool_size", 0}});
  }
  *budget = params.budget ? *params.budget : onboarding::budget_of_fraction(*params.fraction, n);
  if (*budget > n) {
    return error_response(
        Status::invalid_argument("budget " + std::to_string(*budget) + " is larger than the unmeasured pool (" +
                                 std::to_string(n) + " candidates)"),
        json::object{{"field", "budget"}, {"pool_size", n}});
  }
  return std::nullopt;
}

std::optional<Response> refuse_by_sizes(const std::string& name, const SampleParams& params,
                                        const std::vector<std::int64_t>& sizes) {
  std::int64_t n = 0;
  for (std::int64_t size : sizes) n += size;
  std::int64_t budget = 0;
  if (auto refused = refuse_budget(name, params, n, &budget)) return refused;
  if (auto quotas = sampler::task_quotas(sizes, budget, params.round.min_per_task); !quotas) {
    return error_response(quotas.status(),
                          json::object{{"field", "budget"}, {"pool_size", n}, {"tasks", sizes.size()}});
  }
  return std::nullopt;
}

// The round (onboarding::run_round over the platform's pool in the
// registry) into *round, or the answer to send instead: a budget the pool
// refuses, or an error.
std::optional<Response> run_sample_round(const Request& req, const SampleParams& params, const Scorers& scorers,
                                         const registry::PlatformRow& platform, registry::UploadStore& uploads,
                                         registry::SampleStore& samples, onboarding::Round* round) {
  onboarding::RoundRequest ask;
  std::optional<Response> refused;
  ask.budget = [&](std::int64_t pool_size) -> std::optional<std::int64_t> {
    std::int64_t budget = 0;
    refused = refuse_budget(platform.name, params, pool_size, &budget);
    return refused ? std::nullopt : std::optional<std::int64_t>(budget);
  };
  ask.options = params.round;
  ask.options.cancel = req.client_gone;  // stops the read and the selection when the client leaves
  ask.embedding = trainer::PoolEmbeddingOptions{params.mc_samples, params.round.seed};
  onboarding::RegistryRoundSource source(uploads, samples, platform.id);
  const Status ran = onboarding::run_round(source, scorers.models, ask, round);
  if (refused) return refused;
  if (!ran) {
    if (round->budget == 0) return error_response(ran);  // reading or embedding the pool
    return error_response(ran, json::object{{"pool_size", static_cast<std::int64_t>(round->program_ids.size())},
                                            {"tasks", round->task_keys.size()}});
  }
  return std::nullopt;
}

// GET /v1/sample-requests/{id}: the request and its items as JSON, or (Accept:
// application/x-ndjson) the records to measure as TVM log lines.
Response handle_get_sample_request(registry::SampleStore& samples, const Request& req) {
  auto id = request_id(req);
  if (!id) return error_response(id.status());
  if (wants_ndjson(req)) {
    std::string body;
    Status s = samples.for_each_record_to_measure(*id, [&body](const std::string& line) {
      body += line;
      body.push_back('\n');
    });
    if (!s) return error_response(s);
    Response res;
    res.content_type = "application/x-ndjson";
    res.body = std::move(body);
    return res;
  }
  auto s = samples.get(*id);
  if (!s) return error_response(s.status());
  auto items = samples.items(*id);
  if (!items) return error_response(items.status());
  json::object out = request_json(*s);
  json::array list;
  list.reserve(items->size());
  for (const auto& it : *items) {
    list.push_back(json::object{{"rank", it.rank},
                                {"program_id", it.program_id},
                                {"r", number_or_null(it.r)},
                                {"d", number_or_null(it.d)},
                                {"u", number_or_null(it.u)},
                                {"score", number_or_null(it.score)},
                                {"measured", it.measured}});
  }
  out["items"] = std::move(list);
  return json_response(http::status::ok, out);
}

}  // namespace

Response handle_list_sample_requests(const Request& req, registry::PlatformStore& platforms,
                                     registry::SampleStore& samples) {
  auto platform = find_platform(platforms, req.param("name"));
  if (!platform) return error_response(platform.status());
  auto list = samples.list(platform->id, 100);
  if (!list) return error_response(list.status());
  json::array items;
  for (const auto& s : *list) items.push_back(request_json(s));
  return json_response(http::status::ok, json::object{{"sample_requests", std::move(items)}});
}

void add_sample_request_routes(Router& router, registry::PlatformStore& platforms, registry::UploadStore& uploads,
                               registry::SampleStore& samples, ModelCache& models, prometheus::Registry& metrics,
                               SampleRequestRouteOptions options) {
  auto computing = std::make_shared<std::atomic<int>>(0);
  const int max_concurrent = std::max(1, options.max_concurrent);
  auto& requests_total = counter_family(metrics, "tcld_sample_requests_total", "Sample requests created, by strategy.");
  auto& items_total = counter_family(metrics, "tcld_sample_request_items_total",
                                     "Programs picked for measurement by sample requests, by strategy.");
  auto& phase_seconds =
      histogram_family(metrics, "tcld_sample_request_seconds",
                       "Time to create a sample request, by phase (embed: read and score the pool; select: RDU).");
  static const prometheus::Histogram::BucketBoundaries kBuckets = {0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60};
  router.add(
      http::verb::post, "/v1/platforms/{name}/sample-requests",
      [&, computing, max_concurrent](const Request& req) -> Response {
        const auto t0 = std::chrono::steady_clock::now();
        const std::string& name = req.param("name");
        if (Status s = check_platform_name(name); !s) return error_response(s);
        auto body = parse_json_object(req.body());
        if (!body) return error_response(body.status());
        auto params = parse_params(*body);
        if (!params) {
          const std::string& field = params.status().field();
          return error_response(params.status(),
                                field.empty() ? json::value(nullptr) : json::value(json::object{{"field", field}}));
        }
        auto slot = ComputeSlot::take(*computing, max_concurrent);
        if (!slot) return busy_response(max_concurrent);
        auto platform = find_platform(platforms, name);
        if (!platform) return error_response(platform.status());
        auto scorers = round_models(*params, body->contains("model"), *platform, platforms, models);
        if (!scorers) return error_response(scorers.status());
        auto sizes = samples.pool_task_sizes(platform->id);
        if (!sizes) return error_response(sizes.status());
        if (auto refused = refuse_by_sizes(name, *params, *sizes)) return std::move(*refused);
        spdlog::info("sample_request: platform={} reading and scoring a pool of {} tasks", name, sizes->size());

        onboarding::Round round;
        if (auto answer = run_sample_round(req, *params, *scorers, *platform, uploads, samples, &round)) {
          return std::move(*answer);
        }
        const auto n = static_cast<std::int64_t>(round.program_ids.size());

        const auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
        const RoundTimes times{seconds(t0, round.embedded_at), seconds(round.embedded_at, round.selected_at)};
        registry::NewSampleRequest nr = new_request(*params, *platform, *scorers, round, times);
        auto stored = samples.create(nr);
        if (!stored) return error_response(stored.status());
        auto items = answer_items(samples, stored->id, nr, round);
        if (!items) return error_response(items.status());
        requests_total.Add({{"strategy", nr.strategy}}).Increment();
        items_total.Add({{"strategy", nr.strategy}}).Increment(static_cast<double>(nr.items.size()));
        phase_seconds.Add({{"phase", "embed"}}, kBuckets).Observe(times.embed);
        phase_seconds.Add({{"phase", "select"}}, kBuckets).Observe(times.select);
        spdlog::info(
            "sample_request: id={} platform={} strategy={} pool={} tasks={} budget={} embed_s={:.2f} select_s={:.2f}",
            stored->id, name, nr.strategy, n, round.task_keys.size(), round.budget, times.embed, times.select);
        json::object out = request_json(*stored);
        out["items"] = std::move(*items);
        Response res = json_response(http::status::created, out);
        res.headers["Location"] = "/v1/sample-requests/" + std::to_string(stored->id);
        return res;
      },
      RouteOptions{Access::kWrite, std::size_t{64 << 10}});

  router.add(http::verb::get, "/v1/platforms/{name}/sample-requests", [&platforms, &samples](const Request& req) {
    return handle_list_sample_requests(req, platforms, samples);
  });

  router.add(http::verb::get, "/v1/sample-requests/{id}",
             [&samples](const Request& req) { return handle_get_sample_request(samples, req); });

  router.add(
      http::verb::post, "/v1/sample-requests/{id}/cancel",
      [&samples](const Request& req) -> Response {
        auto id = request_id(req);
        if (!id) return error_response(id.status());
        auto s = samples.cancel(*id);
        if (!s) return error_response(s.status());
        return json_response(http::status::ok, request_json(*s));
      },
      RouteOptions{Access::kWrite, std::size_t{4 << 10}});
}

}  // namespace tcl::api
