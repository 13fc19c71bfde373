// trainer/model_config.cc
#include "trainer/model_config.h"

#include <charconv>
#include <cstdio>
#include <string>

namespace tcl::trainer {
namespace {

// One entry per config field: its key and how to read/write it. The table is
// the single place that lists the fields, so text and validation agree.
struct IntField {
  const char* key;
  int64_t ModelConfig::*member;
  int64_t min_value;
};

constexpr IntField kIntFields[] = {
    {"token_dim", &ModelConfig::token_dim, 1},     {"descriptor_dim", &ModelConfig::descriptor_dim, 1},
    {"max_len", &ModelConfig::max_len, 1},         {"d_model", &ModelConfig::d_model, 1},
    {"n_layers", &ModelConfig::n_layers, 1},       {"d_state", &ModelConfig::d_state, 1},
    {"expand", &ModelConfig::expand, 1},           {"d_conv", &ModelConfig::d_conv, 1},
    {"dt_rank", &ModelConfig::dt_rank, 0},         {"n_heads", &ModelConfig::n_heads, 1},
    {"ff_mult", &ModelConfig::ff_mult, 1},         {"film_hidden", &ModelConfig::film_hidden, 1},
    {"head_hidden", &ModelConfig::head_hidden, 1},
};

// A generous bound on every width, so a corrupt config cannot ask for a
// multi-gigabyte model.
constexpr int64_t kMaxDim = 1 << 16;

template <typename T>
bool parse_number(std::string_view text, T& out) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, out);
  return ec == std::errc() && ptr == last;
}

}  // namespace

std::string_view model_kind_name(ModelKind kind) {
  switch (kind) {
    case ModelKind::kMamba: return "mamba";
    case ModelKind::kAttention: return "attention";
    case ModelKind::kMlp: return "mlp";
  }
  return "unknown";
}

std::optional<ModelKind> parse_model_kind(std::string_view name) {
  if (name == "mamba") return ModelKind::kMamba;
  if (name == "attention") return ModelKind::kAttention;
  if (name == "mlp") return ModelKind::kMlp;
  return std::nullopt;
}

bool same_layout(ModelConfig a, ModelConfig b) {
  a.seed = b.seed = 0;
  return config_to_text(a) == config_to_text(b);
}

std::string_view adapter_layers_name(AdapterLayers layers) { return layers == AdapterLayers::kAll ? "all" : "blocks"; }

std::optional<AdapterLayers> parse_adapter_layers(std::string_view name) {
  if (name == "blocks") return AdapterLayers::kBlocks;
  if (name == "all") return AdapterLayers::kAll;
  return std::nullopt;
}

int64_t resolved_dt_rank(const ModelConfig& config) {
  return config.dt_rank > 0 ? config.dt_rank : (config.d_model + 15) / 16;
}

Status validate(const ModelConfig& config) {
  for (const IntField& f : kIntFields) {
    const int64_t v = config.*f.member;
    if (v < f.min_value || v > kMaxDim) {
      return Status::invalid_argument("model config: " + std::string(f.key) + "=" + std::to_string(v) +
                                      " is out of range [" + std::to_string(f.min_value) + ", " +
                                      std::to_string(kMaxDim) + "]");
    }
  }
  if (!(config.dropout >= 0.0 && config.dropout < 1.0)) {
    return Status::invalid_argument("model config: dropout=" + std::to_string(config.dropout) + " must be in [0, 1)");
  }
  if (config.kind == ModelKind::kAttention && config.d_model % config.n_heads != 0) {
    return Status::invalid_argument("model config: n_heads=" + std::to_string(config.n_heads) +
                                    " does not divide d_model=" + std::to_string(config.d_model));
  }
  return Status::ok();
}

std::string config_to_text(const ModelConfig& config) {
  std::string out = "kind=" + std::string(model_kind_name(config.kind)) + "\n";
  for (const IntField& f : kIntFields) {
    out += f.key;
    out += '=';
    out += std::to_string(config.*f.member);
    out += '\n';
  }
  // %.17g round-trips a double exactly.
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", config.dropout);
  out += "dropout=" + std::string(buf) + "\n";
  out += "seed=" + std::to_string(config.seed) + "\n";
  return out;
}

Result<ModelConfig> config_from_text(std::string_view text) {
  ModelConfig config;
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    const auto bad = [&](const char* why) {
      return Status::invalid_argument("model config line " + std::to_string(line_no) + " '" + std::string(line) +
                                      "': " + why);
    };
    if (eq == std::string_view::npos) return bad("expected key=value");
    const std::string_view key = line.substr(0, eq);
    const std::string_view value = line.substr(eq + 1);
    if (key == "kind") {
      auto kind = parse_model_kind(value);
      if (!kind) return bad("unknown model kind");
      config.kind = *kind;
      continue;
    }
    if (key == "dropout") {
      if (!parse_number(value, config.dropout)) return bad("not a number");
      continue;
    }
    if (key == "seed") {
      if (!parse_number(value, config.seed)) return bad("not an unsigned integer");
      continue;
    }
    bool known = false;
    for (const IntField& f : kIntFields) {
      if (key != f.key) continue;
      known = true;
      if (!parse_number(value, config.*f.member)) return bad("not an integer");
      break;
    }
    if (!known) return bad("unknown key");
  }
  if (Status s = validate(config); !s) return s;
  return config;
}

}  // namespace tcl::trainer
