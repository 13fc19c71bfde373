#include "api/handlers/inference_v2.h"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "api/descriptor_cache.h"
#include "api/http_error.h"
#include "api/scoring.h"
#include "api/json_body.h"
#include "core/features.h"
#include "trainer/model_config.h"

namespace tcl::api {
namespace json = boost::json;

namespace {

// The request's tensors, row-major. Allocated per request: the JSON body
// they come from costs far more.
struct Tensors {
  std::vector<float> tokens;
  std::vector<std::int32_t> lengths;
  std::vector<float> scores;
};

// The protocol's error body: {"error": "<message>"}.
Response v2_error(http::status status, const std::string& message) {
  return json_response(status, json::object{{"error", message}});
}
Response v2_error(const Status& s) {
  Response r = v2_error(http_status_for(s.code()), public_message(s));
  if (static_cast<int>(r.status) >= 500) r.log_cause = s.to_string();
  return r;
}

// A health answer: the status is the answer, the body is empty.
Response health_answer(bool yes) {
  Response r;
  r.status = yes ? http::status::ok : http::status::bad_request;
  r.content_type = "text/plain; charset=utf-8";
  return r;
}

// The version a route names: {v} when given (all digits), else the alias.
// kNotFound for a {v} that is not a version number.
Result<std::string> model_ref(const Request& req, const std::string& model_name) {
  const auto v = req.path_params.find("version");
  if (v == req.path_params.end()) return std::string(registry::kProductionAlias);
  const std::string& text = v->second;
  const bool digits = !text.empty() && text.size() <= 18 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) {
    return Status::not_found("model '" + model_name + "' has no version '" + text + "' (versions are numbers)");
  }
  return text;
}

Status check_name(const Request& req, const std::string& model_name) {
  const std::string& name = req.param("name");
  if (name == model_name) return Status::ok();
  return Status::not_found("unknown model '" + name + "'; this server serves one model, '" + model_name + "'");
}

Result<std::shared_ptr<const LoadedModel>> resolve(const Request& req, ModelCache& models,
                                                   const std::string& model_name) {
  if (Status s = check_name(req, model_name); !s) return s;
  auto ref = model_ref(req, model_name);
  if (!ref) return ref.status();
  auto m = models.get(*ref);
  if (!m && m.status().code() == StatusCode::kNotFound && *ref != registry::kProductionAlias) {
    return Status::not_found("model '" + model_name + "' has no version " + *ref);
  }
  return m;
}

json::object tensor_metadata(std::string_view name, std::string_view datatype, json::array shape) {
  return json::object{{"name", name}, {"datatype", datatype}, {"shape", std::move(shape)}};
}

// --- reading tensors -------------------------------------------------------

struct TensorHeader {
  std::string name;
  std::string datatype;
  std::vector<std::uint64_t> shape;
  const json::value* data = nullptr;
};

Status tensor_error(std::string_view tensor, const std::string& what) {
  return Status::invalid_argument("input '" + std::string(tensor) + "': " + what);
}

// {"name", "shape", "datatype", "data"} of inputs[index].
Result<TensorHeader> read_header(const json::value& v, std::size_t index) {
  const std::string where = "inputs[" + std::to_string(index) + "]";
  const json::object* o = v.if_object();
  if (o == nullptr)
    return Status::invalid_argument(where + " must be an object {\"name\", \"shape\", \"datatype\", \"data\"}");
  TensorHeader h;
  const json::value* name = o->if_contains("name");
  if (name == nullptr || !name->is_string()) return Status::invalid_argument(where + ": 'name' must be a string");
  h.name = std::string(name->get_string());
  const json::value* datatype = o->if_contains("datatype");
  if (datatype == nullptr || !datatype->is_string()) return tensor_error(h.name, "'datatype' must be a string");
  h.datatype = std::string(datatype->get_string());
  const json::value* shape = o->if_contains("shape");
  if (shape == nullptr || !shape->is_array()) return tensor_error(h.name, "'shape' must be an array of integers");
  for (const json::value& d : shape->get_array()) {
    if (d.is_int64() && d.get_int64() >= 0) {
      h.shape.push_back(static_cast<std::uint64_t>(d.get_int64()));
    } else if (d.is_uint64()) {
      h.shape.push_back(d.get_uint64());
    } else {
      return tensor_error(h.name, "'shape' must be an array of non-negative integers");
    }
  }
  h.data = o->if_contains("data");
  if (h.data == nullptr || !h.data->is_array()) return tensor_error(h.name, "'data' must be an array");
  return h;
}

// Appends the elements of `a`, nested as shape[depth..], to *out through
// `convert` (false: not an element of the datatype).
template <typename T, typename Convert>
Status read_nested(const json::array& a, const TensorHeader& h, std::size_t depth, const Convert& convert,
                   std::vector<T>* out) {
  if (a.size() != h.shape[depth]) {
    return tensor_error(h.name, "'data' at depth " + std::to_string(depth) + " has " + std::to_string(a.size()) +
                                    " elements; the shape says " + std::to_string(h.shape[depth]));
  }
  const bool last = depth + 1 == h.shape.size();
  for (const json::value& e : a) {
    if (last) {
      T x;
      if (!convert(e, &x))
        return tensor_error(h.name, "element " + std::to_string(out->size()) + " is not " + h.datatype);
      out->push_back(x);
    } else if (const json::array* inner = e.if_array()) {
      if (Status s = read_nested(*inner, h, depth + 1, convert, out); !s) return s;
    } else {
      return tensor_error(h.name, "'data' must be flat or nested as the shape");
    }
  }
  return Status::ok();
}

// The tensor's data, row-major, given flat or nested as its shape.
template <typename T, typename Convert>
Status read_data(const TensorHeader& h, std::uint64_t count, const Convert& convert, std::vector<T>* out) {
  out->clear();
  const json::array& a = h.data->get_array();
  const bool nested = h.shape.size() > 1 && !a.empty() && a.front().is_array();
  // Nested data is checked level by level before it is read, so what is
  // stored is bounded by what was sent, not by what the shape claims.
  if (nested) return read_nested(a, h, 0, convert, out);
  if (a.size() != count) {
    return tensor_error(
        h.name, "'data' has " + std::to_string(a.size()) + " elements; the shape says " + std::to_string(count));
  }
  out->reserve(count);
  for (const json::value& e : a) {
    T x;
    if (!convert(e, &x))
      return tensor_error(h.name, "element " + std::to_string(out->size()) + " is not " + h.datatype);
    out->push_back(x);
  }
  return Status::ok();
}

bool to_fp32(const json::value& v, float* out) {
  double d;
  if (v.is_double()) {
    d = v.get_double();
  } else if (v.is_int64()) {
    d = static_cast<double>(v.get_int64());
  } else if (v.is_uint64()) {
    d = static_cast<double>(v.get_uint64());
  } else {
    return false;
  }
  *out = static_cast<float>(d);
  return std::isfinite(*out);
}

bool to_int32(const json::value& v, std::int32_t* out) {
  std::int64_t i;
  if (v.is_int64()) {
    i = v.get_int64();
  } else if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
    i = static_cast<std::int64_t>(v.get_uint64());
  } else {
    return false;
  }
  if (i < std::numeric_limits<std::int32_t>::min() || i > std::numeric_limits<std::int32_t>::max()) return false;
  *out = static_cast<std::int32_t>(i);
  return true;
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// A parsed infer request, checked against the model it is for.
struct InferInput {
  std::optional<std::string> id;
  std::string platform;
  std::int64_t count = 0;    // n
  std::int64_t seq_len = 0;  // L
};

// Reads the request into `in` and s.tokens / s.lengths; kInvalidArgument
// naming the field or input at fault, kResourceExhausted for too many programs.
Status read_infer_request(const json::object& body, const trainer::ModelConfig& config, std::int64_t version,
                          std::size_t max_programs, InferInput* in, Tensors& s) {
  if (const json::value* id = body.if_contains("id")) {
    if (!id->is_string()) return Status::invalid_argument("'id' must be a string");
    in->id = std::string(id->get_string());
  }
  const json::value* params = body.if_contains("parameters");
  const json::value* platform =
      params != nullptr && params->is_object() ? params->get_object().if_contains("platform") : nullptr;
  if (params != nullptr && !params->is_object()) return Status::invalid_argument("'parameters' must be an object");
  if (platform == nullptr || !platform->is_string()) {
    return Status::invalid_argument(
        "'parameters.platform' must name a registered platform (its hardware descriptor conditions the model)");
  }
  in->platform = std::string(platform->get_string());

  if (const json::value* outputs = body.if_contains("outputs")) {
    if (!outputs->is_array()) return Status::invalid_argument("'outputs' must be an array");
    for (const json::value& o : outputs->get_array()) {
      const json::value* name = o.is_object() ? o.get_object().if_contains("name") : nullptr;
      if (name == nullptr || !name->is_string()) return Status::invalid_argument("each of 'outputs' needs a 'name'");
      if (name->get_string() != "scores") {
        return Status::invalid_argument("unknown output '" + std::string(name->get_string()) +
                                        "'; this model has one output, 'scores'");
      }
    }
  }

  const json::value* inputs = body.if_contains("inputs");
  if (inputs == nullptr || !inputs->is_array()) return Status::invalid_argument("'inputs' must be an array");
  std::optional<TensorHeader> tokens, lengths;
  for (std::size_t i = 0; i < inputs->get_array().size(); ++i) {
    auto h = read_header(inputs->get_array()[i], i);
    if (!h) return h.status();
    std::optional<TensorHeader>* slot = h->name == "tokens" ? &tokens : h->name == "lengths" ? &lengths : nullptr;
    if (slot == nullptr) {
      return Status::invalid_argument("unknown input '" + h->name +
                                      "'; this model reads 'tokens' and optionally 'lengths'");
    }
    if (slot->has_value()) return Status::invalid_argument("input '" + h->name + "' is given twice");
    *slot = std::move(*h);
  }
  if (!tokens) return Status::invalid_argument("input 'tokens' (FP32 [n, L, D]) is required");

  // tokens: FP32 [n, L, D], D = token_dim, 1 ≤ L ≤ max_len.
  const TensorHeader& t = *tokens;
  if (t.datatype != "FP32") return tensor_error("tokens", "datatype must be FP32, not " + t.datatype);
  if (t.shape.size() != 3) return tensor_error("tokens", "shape must be [n, L, D], not " + shape_text(t.shape));
  if (t.shape[2] != static_cast<std::uint64_t>(config.token_dim)) {
    return tensor_error("tokens", "D = " + std::to_string(t.shape[2]) + ", but model version " +
                                      std::to_string(version) + " reads tokens of " + std::to_string(config.token_dim) +
                                      " floats (core/features.h)");
  }
  if (t.shape[1] < 1 || t.shape[1] > static_cast<std::uint64_t>(config.max_len)) {
    return tensor_error("tokens", "L = " + std::to_string(t.shape[1]) + " is outside [1, " +
                                      std::to_string(config.max_len) + "] (model version " + std::to_string(version) +
                                      " reads at most " + std::to_string(config.max_len) + " steps)");
  }
  if (t.shape[0] > max_programs) {
    return Status::resource_exhausted(std::to_string(t.shape[0]) + " programs in one request; at most " +
                                      std::to_string(max_programs) + " (split the batch)");
  }
  in->count = static_cast<std::int64_t>(t.shape[0]);
  in->seq_len = static_cast<std::int64_t>(t.shape[1]);
  const std::uint64_t elements = t.shape[0] * t.shape[1] * t.shape[2];
  if (Status st = read_data(t, elements, to_fp32, &s.tokens); !st) return st;

  // lengths: INT32/INT64 [n], each in [0, L]; default L.
  if (lengths) {
    const TensorHeader& l = *lengths;
    if (l.datatype != "INT32" && l.datatype != "INT64") {
      return tensor_error("lengths", "datatype must be INT32 or INT64, not " + l.datatype);
    }
    if (l.shape.size() != 1 || l.shape[0] != t.shape[0]) {
      return tensor_error("lengths",
                          "shape must be [n] = [" + std::to_string(t.shape[0]) + "], not " + shape_text(l.shape));
    }
    if (Status st = read_data(l, l.shape[0], to_int32, &s.lengths); !st) return st;
    for (std::size_t i = 0; i < s.lengths.size(); ++i) {
      if (s.lengths[i] < 0 || s.lengths[i] > in->seq_len) {
        return tensor_error("lengths", "lengths[" + std::to_string(i) + "] = " + std::to_string(s.lengths[i]) +
                                           " is outside [0, L = " + std::to_string(in->seq_len) + "]");
      }
    }
  } else {
    s.lengths.assign(static_cast<std::size_t>(in->count), static_cast<std::int32_t>(in->seq_len));
  }
  return Status::ok();
}

// The answer to an infer request scored by `pm` (the platform's model of
// version `lm`).
Response infer_answer(const std::string& model_name, const LoadedModel& lm, const LoadedModel& pm, const InferInput& in,
                      const std::vector<float>& scores) {
  json::array data;
  data.reserve(scores.size());
  for (float v : scores) data.emplace_back(static_cast<double>(v));
  json::object answer{{"model_name", model_name}, {"model_version", std::to_string(lm.version)}};
  if (in.id) answer["id"] = *in.id;
  answer["parameters"] = json::object{{"platform", in.platform},
                                      {"platform_covered", platform_covered(lm, in.platform)},
                                      {"platform_adapter", !pm.adapter_platform.empty()}};
  answer["outputs"] = json::array{json::object{
      {"name", "scores"}, {"datatype", "FP32"}, {"shape", json::array{in.count}}, {"data", std::move(data)}}};
  return json_response(http::status::ok, answer);
}

// What the routes share, alive as long as they are.
struct SharedServices {
  SharedServices(registry::PlatformStore& platforms, registry::ModelStore& store, ModelCache& models,
                 prometheus::Registry& registry, InferenceV2Options opts)
      : options(std::move(opts)), descriptors(platforms),
        metrics(registry), svc{store, models, descriptors, metrics, options} {}
  const InferenceV2Options options;
  DescriptorCache descriptors;
  InferMetrics metrics;
  InferenceV2Services svc;
};

}  // namespace

Response handle_v2_live(const Request&) { return health_answer(true); }

Response handle_v2_ready(const Request&, const InferenceV2Options& options) {
  bool ready = true;
  if (options.readiness) {
    for (const ReadinessCheck& c : options.readiness()) ready = ready && c.ok;
  }
  return health_answer(ready);
}

Response handle_v2_server_metadata(const Request&) {
  return json_response(http::status::ok,
                       json::object{{"name", "tcld"}, {"version", TCL_VERSION}, {"extensions", json::array{}}});
}

Response handle_v2_model_metadata(const Request& req, InferenceV2Services& svc) {
  const std::string& model_name = svc.options.model_name;
  auto m = resolve(req, svc.models, model_name);
  if (!m) return v2_error(m.status());
  const LoadedModel& lm = **m;
  const trainer::ModelConfig& c = lm.model->config();
  auto lineage = svc.store.lineage();
  if (!lineage) return v2_error(lineage.status());
  json::array versions, covered;
  for (const registry::VersionInfo& v : *lineage) versions.emplace_back(std::to_string(v.version));
  for (const std::string& p : lm.platforms) covered.emplace_back(p);
  json::array inputs{tensor_metadata("tokens", "FP32", json::array{-1, -1, c.token_dim}),
                     tensor_metadata("lengths", "INT64", json::array{-1})};
  json::array outputs{tensor_metadata("scores", "FP32", json::array{-1})};
  // "parameters" is tcld's addition: what the shapes above leave open.
  return json_response(http::status::ok,
                       json::object{{"name", model_name},
                                    {"versions", std::move(versions)},
                                    {"platform", "tcl_" + std::string(trainer::model_kind_name(c.kind))},
                                    {"inputs", std::move(inputs)},
                                    {"outputs", std::move(outputs)},
                                    {"parameters", json::object{{"version", std::to_string(lm.version)},
                                                                {"max_len", c.max_len},
                                                                {"token_dim", c.token_dim},
                                                                {"descriptor_dim", c.descriptor_dim},
                                                                {"feature_version", core::kFeatureVersion},
                                                                {"platforms", std::move(covered)}}}});
}

Response handle_v2_model_ready(const Request& req, InferenceV2Services& svc) {
  auto m = resolve(req, svc.models, svc.options.model_name);
  if (!m && m.status().code() == StatusCode::kNotFound) return v2_error(m.status());
  return health_answer(m.is_ok());
}

Response handle_v2_infer(const Request& req, InferenceV2Services& svc) {
  const auto t0 = std::chrono::steady_clock::now();
  const InferenceV2Options& opts = svc.options;
  if (Status s = check_name(req, opts.model_name); !s) return v2_error(s);
  auto body = parse_json_object(req.body());
  if (!body) return v2_error(body.status());
  auto m = resolve(req, svc.models, opts.model_name);
  if (!m) return v2_error(m.status());
  const LoadedModel& lm = **m;
  const trainer::ModelConfig& config = lm.model->config();
  if (config.descriptor_dim != core::kHardwareDim) {
    return v2_error(Status::failed_precondition("model version " + std::to_string(lm.version) +
                                                " reads another hardware descriptor (descriptor_dim " +
                                                std::to_string(config.descriptor_dim) + ")"));
  }

  Tensors s;
  InferInput in;
  if (Status st = read_infer_request(*body, config, lm.version, opts.max_programs, &in, s); !st) return v2_error(st);
  auto descriptor = svc.descriptors.get(in.platform);
  if (!descriptor) return v2_error(descriptor.status());
  // The platform's own model: the trunk with its adapter, when the version keeps one (same config).
  auto own = svc.models.get(std::to_string(lm.version), in.platform);
  if (!own) return v2_error(own.status());
  const LoadedModel& pm = **own;

  s.scores.resize(static_cast<std::size_t>(in.count));
  const trainer::FeatureBatch batch{in.count, in.seq_len, s.tokens, s.lengths,
                                    std::span<const float>(descriptor->data(), descriptor->size())};
  if (Status scored = score_batch(pm, batch, s.scores); !scored) return v2_error(scored);
  if (Status finite = check_scores(lm, s.scores); !finite) return v2_error(finite);
  svc.metrics.programs.Increment(static_cast<double>(in.count));
  svc.metrics.seconds.Increment(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return infer_answer(opts.model_name, lm, pm, in, s.scores);
}

void add_inference_v2_routes(Router& router, registry::PlatformStore& platforms, registry::ModelStore& store,
                             ModelCache& models, prometheus::Registry& registry, InferenceV2Options options) {
  auto shared = std::make_shared<SharedServices>(platforms, store, models, registry, std::move(options));
  RouteOptions live{Access::kOpen, std::size_t{0}};
  live.lane = Lane::kInline;
  RouteOptions open{Access::kOpen, std::size_t{0}};
  open.lane = Lane::kProbe;
  const RouteOptions read{Access::kRead, std::size_t{0}};
  const RouteOptions infer{Access::kRead, shared->options.body_limit};
  const auto route = [shared](Response (*handle)(const Request&, InferenceV2Services&)) {
    return [shared, handle](const Request& req) { return handle(req, shared->svc); };
  };

  router.add(http::verb::get, "/v2/health/live", handle_v2_live, live);
  router.add(
      http::verb::get, "/v2/health/ready",
      [shared](const Request& req) { return handle_v2_ready(req, shared->options); }, open);
  router.add(http::verb::get, "/v2", handle_v2_server_metadata, read);
  router.add(http::verb::get, "/v2/models/{name}", route(handle_v2_model_metadata), read);
  router.add(http::verb::get, "/v2/models/{name}/versions/{version}", route(handle_v2_model_metadata), read);
  router.add(http::verb::get, "/v2/models/{name}/ready", route(handle_v2_model_ready), read);
  router.add(http::verb::get, "/v2/models/{name}/versions/{version}/ready", route(handle_v2_model_ready), read);
  router.add(http::verb::post, "/v2/models/{name}/infer", route(handle_v2_infer), infer);
  router.add(http::verb::post, "/v2/models/{name}/versions/{version}/infer", route(handle_v2_infer), infer);
}

}  // namespace tcl::api
