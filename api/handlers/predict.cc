#include "api/handlers/predict.h"

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/http_error.h"
#include "api/json_body.h"
#include "api/scoring.h"
#include "core/features.h"
#include "core/record.h"

namespace tcl::api {
namespace json = boost::json;

namespace {

// Programs per encode+score pass: bounds the token buffer (512 · 72 · 50
// floats = 7 MB at worst) whatever the request's size.
constexpr std::size_t kPassPrograms = 512;

// Reused between requests on one handler thread: nothing below allocates in
// the steady state.
struct Scratch {
  core::RecordParser parser;
  std::vector<core::Record> records = std::vector<core::Record>(kPassPrograms);
  std::string line;
  std::vector<float> tokens;
  std::vector<std::int32_t> lengths;
};

// A predict request's body, its fields read.
struct PredictInput {
  json::object body;
  std::string platform;
  std::string model;           // alias or version
  bool is_records = false;     // "records" (TVM records) or "programs"
  std::string_view list_name;  // "records" or "programs": an array in `body`
  const json::array& items() const { return body.at(list_name).get_array(); }
};

// kInvalidArgument naming the field at fault; kResourceExhausted (413) for
// an array longer than max_programs, found while scanning, before a DOM
// exists: no array here is longer (issue 45 #8).
Result<PredictInput> read_request(const Request& req, std::size_t max_programs) {
  PredictInput in;
  auto body = parse_json_object(req.body(), JsonLimits{.max_array_items = max_programs});
  if (!body) return body.status();
  in.body = std::move(*body);
  auto platform = required_string(in.body, "platform");
  if (!platform) return platform.status().with_field("platform");
  in.platform = std::move(*platform);
  auto model_name = optional_string(in.body, "model");
  if (!model_name) return model_name.status().with_field("model");
  in.model = model_name->value_or("production");

  const bool records = in.body.contains("records");
  if (records == in.body.contains("programs")) {
    return Status::invalid_argument("give exactly one of 'records' or 'programs'");
  }
  in.is_records = records;
  in.list_name = records ? "records" : "programs";
  if (!in.body.at(in.list_name).is_array()) {
    return Status::invalid_argument("field '" + std::string(in.list_name) + "' must be an array")
        .with_field(std::string(in.list_name));
  }
  return in;
}

Response bad_program(std::string_view list, std::size_t index, const std::string& reason) {
  return error_response(Status::invalid_argument(std::string(list) + "[" + std::to_string(index) + "]: " + reason),
                        json::object{{"field", list}, {"index", index}, {"reason", reason}});
}

// The steps of element `index` of "records" (a record object or a record
// line) or "programs" ({"workload_key", "steps"}) into *out.
Status parse_program(Scratch& s, bool records, const json::value& v, core::Record* out) {
  if (!records) {
    const json::object* o = v.if_object();
    if (o == nullptr) return Status::invalid_argument("a program must be an object {\"workload_key\", \"steps\"}");
    const json::value* key = o->if_contains("workload_key");
    if (key == nullptr || !key->is_string()) return Status::invalid_argument("field 'workload_key' must be a string");
    const json::value* steps = o->if_contains("steps");
    if (steps == nullptr) return Status::invalid_argument("field 'steps' is missing");
    out->workload_key.assign(key->get_string().data(), key->get_string().size());
    return core::parse_steps(*steps, "steps", &out->steps);
  }
  if (const json::string* line = v.if_string()) return s.parser.parse(std::string_view(*line), out);
  if (!v.is_object()) return Status::invalid_argument("a record must be a JSON object or a record line");
  s.line = json::serialize(v);
  return s.parser.parse(s.line, out);
}

// Parses, encodes and scores the request's programs in passes of
// kPassPrograms into *scores; *truncated counts programs longer than the
// model reads. A bad program is a 400 naming it (the answer is returned).
std::optional<Response> score_programs(const PredictInput& in, const LoadedModel& m, const Descriptor& descriptor,
                                       std::vector<float>* scores, std::size_t* truncated) {
  thread_local Scratch s;
  const trainer::ModelConfig& config = m.model->config();
  const json::array& items = in.items();
  const std::size_t n = items.size();
  scores->resize(n);
  for (std::size_t begin = 0; begin < n; begin += kPassPrograms) {
    const std::size_t count = std::min(kPassPrograms, n - begin);
    int L = 1;
    for (std::size_t i = 0; i < count; ++i) {
      core::Record& r = s.records[i];
      if (Status st = parse_program(s, in.is_records, items[begin + i], &r); !st) {
        return bad_program(in.list_name, begin + i, st.message());
      }
      const auto steps = static_cast<std::int64_t>(r.steps.size());
      if (steps > config.max_len) ++*truncated;
      L = std::max<int>(L, static_cast<int>(std::min(steps, config.max_len)));
    }
    const std::size_t stride = static_cast<std::size_t>(L) * core::kTokenDim;
    s.tokens.resize(count * stride);
    s.lengths.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
      s.lengths[i] = core::encode_tokens(s.records[i].steps, L, s.tokens.data() + i * stride);
    }
    const trainer::FeatureBatch batch{static_cast<std::int64_t>(count), L, s.tokens, s.lengths,
                                      std::span<const float>(descriptor.data(), descriptor.size())};
    if (Status scored = score_batch(m, batch, std::span<float>(scores->data() + begin, count)); !scored) {
      return error_response(scored);
    }
  }
  return std::nullopt;
}

}  // namespace

Response handle_predict(const Request& req, PredictServices& svc) {
  const auto t0 = std::chrono::steady_clock::now();
  auto read = read_request(req, svc.options.max_programs);
  if (!read) return error_response(read.status());
  const PredictInput& in = *read;

  auto descriptor = svc.descriptors.get(in.platform);
  if (!descriptor) return error_response(descriptor.status(), json::object{{"platform", in.platform}});
  auto model = svc.models.get(in.model, in.platform);  // its adapter, if any
  if (!model) return error_response(model.status(), json::object{{"model", in.model}});
  const LoadedModel& m = **model;
  const trainer::ModelConfig& config = m.model->config();
  if (config.token_dim != core::kTokenDim || config.descriptor_dim != core::kHardwareDim) {
    return error_response(Status::failed_precondition(
        "model version " + std::to_string(m.version) + " reads another feature encoding (token_dim " +
        std::to_string(config.token_dim) + "); predict serves models of the step-token encoding"));
  }

  std::vector<float> scores;
  std::size_t truncated = 0;
  if (auto refused = score_programs(in, m, *descriptor, &scores, &truncated)) return std::move(*refused);
  if (Status finite = check_scores(m, scores); !finite) return error_response(finite);

  const std::size_t n = scores.size();
  svc.metrics.programs.Increment(static_cast<double>(n));
  svc.metrics.batch_size.Observe(static_cast<double>(n));
  svc.metrics.seconds.Increment(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  json::array out;
  out.reserve(n);
  for (float v : scores) out.emplace_back(static_cast<double>(v));
  return json_response(http::status::ok, json::object{{"model_version", m.version},
                                                      {"platform", in.platform},
                                                      {"platform_covered", platform_covered(m, in.platform)},
                                                      {"platform_adapter", !m.adapter_platform.empty()},
                                                      {"truncated", truncated},
                                                      {"scores", std::move(out)}});
}

void add_predict_routes(Router& router, registry::PlatformStore& platforms, ModelCache& models,
                        prometheus::Registry& registry, PredictRouteOptions options) {
  auto descriptors = std::make_shared<DescriptorCache>(platforms);
  auto metrics = std::make_shared<PredictMetrics>(registry);
  router.add(
      http::verb::post, "/v1/predict",
      [&models, descriptors, metrics, options](const Request& req) {
        PredictServices svc{*descriptors, models, *metrics, options};
        return handle_predict(req, svc);
      },
      RouteOptions{Access::kRead, options.body_limit, false});
}

}  // namespace tcl::api
