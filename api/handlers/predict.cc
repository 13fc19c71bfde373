#include "api/handlers/predict.h"

#include <prometheus/counter.h>
#include <prometheus/histogram.h>

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "api/descriptor_cache.h"
#include "api/http_error.h"
#include "api/metrics.h"
#include "api/json_body.h"
#include "core/features.h"
#include "core/record.h"

namespace tcl::api {
namespace json = boost::json;

namespace {

// Programs per encode+score pass: bounds the token buffer (512 · 72 · 50
// floats = 7 MB at worst) whatever the request's size.
constexpr std::size_t kPassPrograms = 512;

struct PredictMetrics {
  explicit PredictMetrics(prometheus::Registry& r)
      : programs(counter(r, "tcld_predict_programs_total", "Programs scored by POST /v1/predict.")),
        batch_size(histogram_family(r, "tcld_predict_batch_size", "Programs per POST /v1/predict request.")
                       .Add({}, prometheus::Histogram::BucketBoundaries{1, 8, 64, 256, 1024, 4096, 16384, 65536})),
        seconds(counter(r, "tcld_predict_model_seconds_total",
                        "Seconds spent parsing, encoding and scoring in POST /v1/predict (throughput = programs / "
                        "seconds).")) {}
  prometheus::Counter& programs;
  prometheus::Histogram& batch_size;
  prometheus::Counter& seconds;
};

// Reused between requests on one handler thread: nothing below allocates in
// the steady state.
struct Scratch {
  core::RecordParser parser;
  std::vector<core::Record> records = std::vector<core::Record>(kPassPrograms);
  std::string line;
  std::vector<float> tokens;
  std::vector<std::int32_t> lengths;
};

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

}  // namespace

void add_predict_routes(Router& router, registry::PlatformStore& platforms, ModelCache& models,
                        prometheus::Registry& registry, PredictRouteOptions options) {
  auto descriptors = std::make_shared<DescriptorCache>(platforms);
  auto metrics = std::make_shared<PredictMetrics>(registry);

  router.add(
      http::verb::post, "/v1/predict",
      [&models, descriptors, metrics, options](const Request& req) -> Response {
        const auto t0 = std::chrono::steady_clock::now();
        // The item limit (options.max_programs) applies while scanning, before a DOM exists: no array here
        // is longer (issue 45 #8).
        auto body = parse_json_object(req.body(), JsonLimits{.max_array_items = options.max_programs});
        if (!body) return error_response(body.status());
        auto platform = required_string(*body, "platform");
        if (!platform) return error_response(platform.status(), json::object{{"field", "platform"}});
        auto model_name = optional_string(*body, "model");
        if (!model_name) return error_response(model_name.status(), json::object{{"field", "model"}});

        const json::value* records = body->if_contains("records");
        const json::value* programs = body->if_contains("programs");
        if ((records == nullptr) == (programs == nullptr)) {
          return error_response(Status::invalid_argument("give exactly one of 'records' or 'programs'"));
        }
        const bool is_records = records != nullptr;
        const std::string_view list_name = is_records ? "records" : "programs";
        const json::array* items = (is_records ? records : programs)->if_array();
        if (items == nullptr) {
          return error_response(Status::invalid_argument("field '" + std::string(list_name) + "' must be an array"),
                                json::object{{"field", list_name}});
        }

        auto descriptor = descriptors->get(*platform);
        if (!descriptor) return error_response(descriptor.status(), json::object{{"platform", *platform}});
        auto model = models.get(model_name->value_or("production"), *platform);  // its adapter, if any
        if (!model) return error_response(model.status(), json::object{{"model", model_name->value_or("production")}});
        const LoadedModel& m = **model;
        const trainer::ModelConfig& config = m.model->config();
        if (config.token_dim != core::kTokenDim || config.descriptor_dim != core::kHardwareDim) {
          return error_response(Status::failed_precondition(
              "model version " + std::to_string(m.version) + " reads another feature encoding (token_dim " +
              std::to_string(config.token_dim) + "); predict serves models of the step-token encoding"));
        }

        thread_local Scratch s;
        const std::size_t n = items->size();
        std::vector<float> scores(n);
        std::size_t truncated = 0;
        for (std::size_t begin = 0; begin < n; begin += kPassPrograms) {
          const std::size_t count = std::min(kPassPrograms, n - begin);
          int L = 1;
          for (std::size_t i = 0; i < count; ++i) {
            core::Record& r = s.records[i];
            if (Status st = parse_program(s, is_records, (*items)[begin + i], &r); !st) {
              return bad_program(list_name, begin + i, st.message());
            }
            const auto steps = static_cast<std::int64_t>(r.steps.size());
            if (steps > config.max_len) ++truncated;
            L = std::max<int>(L, static_cast<int>(std::min(steps, config.max_len)));
          }
          const std::size_t stride = static_cast<std::size_t>(L) * core::kTokenDim;
          s.tokens.resize(count * stride);
          s.lengths.resize(count);
          for (std::size_t i = 0; i < count; ++i) {
            s.lengths[i] = core::encode_tokens(s.records[i].steps, L, s.tokens.data() + i * stride);
          }
          trainer::FeatureBatch batch;
          batch.count = static_cast<std::int64_t>(count);
          batch.seq_len = L;
          batch.tokens = s.tokens;
          batch.lengths = s.lengths;
          batch.descriptors = std::span<const float>(descriptor->data(), descriptor->size());
          std::span<float> out(scores.data() + begin, count);
          Status scored = m.fast ? m.fast->predict(batch, out) : m.model->predict(batch, out);
          if (!scored) return error_response(scored);
        }
        for (std::size_t i = 0; i < n; ++i) {
          if (!std::isfinite(scores[i])) {
            return error_response(Status::internal("model version " + std::to_string(m.version) +
                                                   " gave a non-finite score for " + std::string(list_name) + "[" +
                                                   std::to_string(i) + "]"));
          }
        }

        metrics->programs.Increment(static_cast<double>(n));
        metrics->batch_size.Observe(static_cast<double>(n));
        metrics->seconds.Increment(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

        json::array out;
        out.reserve(n);
        for (float v : scores) out.emplace_back(static_cast<double>(v));
        const bool covered = std::find(m.platforms.begin(), m.platforms.end(), *platform) != m.platforms.end();
        return json_response(http::status::ok, json::object{{"model_version", m.version},
                                                            {"platform", *platform},
                                                            {"platform_covered", covered},
                                                            {"platform_adapter", !m.adapter_platform.empty()},
                                                            {"truncated", truncated},
                                                            {"scores", std::move(out)}});
      },
      RouteOptions{Access::kRead, options.body_limit, false});
}

}  // namespace tcl::api
