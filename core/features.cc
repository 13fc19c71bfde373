#include "core/features.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstring>
#include <iterator>
#include <vector>

#include <boost/json.hpp>

#include "core/target.h"

namespace tcl::core {

namespace {

// log2(1 + x) for small integers from a table (the token loop calls it ~70
// times per record); larger values go to std::log2.
constexpr int kLogTableSize = 4096;

const std::array<float, kLogTableSize>& log_table() {
  static const std::array<float, kLogTableSize> table = [] {
    std::array<float, kLogTableSize> t{};
    for (int i = 0; i < kLogTableSize; ++i) t[i] = static_cast<float>(std::log2(1.0 + i));
    return t;
  }();
  return table;
}

inline float log1p2(const std::array<float, kLogTableSize>& table, std::int64_t x) {
  if (x <= 0) return 0.0f;
  if (x < kLogTableSize) return table[static_cast<std::size_t>(x)];
  return static_cast<float>(std::log2(1.0 + static_cast<double>(x)));
}

inline float log1p2d(double x) { return x <= 0 ? 0.0f : static_cast<float>(std::log2(1.0 + x)); }

inline float id(std::int32_t x) { return static_cast<float>(x) / kIdScale; }

// "auto_unroll_max_step$64" -> 64; -1 when the pragma is of another type.
std::int64_t auto_unroll_value(std::string_view p) {
  constexpr std::string_view kPrefix = "auto_unroll_max_step$";
  if (p.size() <= kPrefix.size() || p.compare(0, kPrefix.size(), kPrefix) != 0) return -1;
  std::int64_t v = 0;
  for (std::size_t i = kPrefix.size(); i < p.size(); ++i) {
    const char c = p[i];
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
    if (v > (std::int64_t{1} << 40)) return -1;
  }
  return v;
}

// 0 shared, 1 local, 2 global, 3 other (prefix match: "shared.dyn" is shared).
int scope_index(std::string_view s) {
  if (s.compare(0, 6, "shared") == 0) return 0;
  if (s.compare(0, 5, "local") == 0) return 1;
  if (s.compare(0, 6, "global") == 0) return 2;
  return 3;
}

// Split lengths that FSP step `s` follows (TVM FollowSplitStep::ExtractSplitLengths).
// Writes up to kMaxLengths values to `len` and returns how many exist (n_split),
// or 0 when the source step cannot be resolved.
int resolve_follow_split(std::span<const Step> steps, const Step& s, double* len) {
  const std::int32_t j = s.src_step_id;
  if (j < 0 || static_cast<std::size_t>(j) >= steps.size()) return 0;
  const Step& src = steps[static_cast<std::size_t>(j)];
  if (src.kind != StepKind::kSplit) return 0;
  const std::int64_t n = s.n_split;
  const std::int64_t m = static_cast<std::int64_t>(src.lengths.size());
  if (n < 1 || n > m + 1) return 0;
  int k = 0;
  for (; k < n - 1; ++k) {
    if (k < token_slot::kMaxLengths) len[k] = static_cast<double>(src.lengths[static_cast<std::size_t>(k)]);
  }
  double last = 1;
  for (std::int64_t q = n - 1; q < m; ++q) last *= static_cast<double>(src.lengths[static_cast<std::size_t>(q)]);
  if (k < token_slot::kMaxLengths) len[k] = last;
  return static_cast<int>(n);
}

// FollowFusedSplitStep::ExtractSplitLength: product over src steps of lengths[level].
bool resolve_follow_fused_split(std::span<const Step> steps, const Step& s, double* len) {
  double prod = 1;
  for (std::int32_t j : s.ids) {
    if (j < 0 || static_cast<std::size_t>(j) >= steps.size()) return false;
    const Step& src = steps[static_cast<std::size_t>(j)];
    if (src.kind != StepKind::kSplit || s.level < 0 || static_cast<std::size_t>(s.level) >= src.lengths.size()) {
      return false;
    }
    prod *= static_cast<double>(src.lengths[static_cast<std::size_t>(s.level)]);
  }
  *len = prod;
  return true;
}

void encode_step(std::span<const Step> steps, std::size_t i, const std::array<float, kLogTableSize>& lt, float* t) {
  namespace ts = token_slot;
  const Step& s = steps[i];
  t[ts::kKind + static_cast<int>(s.kind)] = 1.0f;
  t[ts::kStage] = id(s.stage_id);
  switch (s.kind) {
    case StepKind::kAnnotation:
      t[ts::kIter] = id(s.iter_id);
      if (s.annotation >= 0 && s.annotation < kNumAnnotations) t[ts::kAnnotation + s.annotation] = 1.0f;
      break;
    case StepKind::kFuse:
      if (!s.ids.empty()) t[ts::kIter] = id(s.ids.front());
      t[ts::kListLength] = log1p2(lt, static_cast<std::int64_t>(s.ids.size()));
      break;
    case StepKind::kPragma: {
      t[ts::kIter] = id(s.iter_id);
      const std::int64_t v = auto_unroll_value(s.pragma_type);
      if (v >= 0) {
        t[ts::kPragmaUnroll] = log1p2(lt, v);
      } else {
        t[ts::kPragmaOther] = 1.0f;
      }
      break;
    }
    case StepKind::kReorder: t[ts::kListLength] = log1p2(lt, static_cast<std::int64_t>(s.ids.size())); break;
    case StepKind::kSplit: {
      t[ts::kIter] = id(s.iter_id);
      t[ts::kExtent] = log1p2(lt, s.extent);
      const std::size_t n = std::min<std::size_t>(s.lengths.size(), ts::kMaxLengths);
      for (std::size_t k = 0; k < n; ++k) t[ts::kLengths + k] = log1p2(lt, s.lengths[k]);
      t[ts::kNumLengths] = static_cast<float>(s.lengths.size()) / ts::kMaxLengths;
      t[ts::kInnerToOuter] = s.inner_to_outer ? 1.0f : 0.0f;
      break;
    }
    case StepKind::kFollowSplit: {
      t[ts::kIter] = id(s.iter_id);
      t[ts::kSrcStep] = id(s.src_step_id);
      double len[ts::kMaxLengths] = {0, 0, 0, 0};
      const int n = resolve_follow_split(steps, s, len);
      for (int k = 0; k < std::min(n, ts::kMaxLengths); ++k) t[ts::kLengths + k] = log1p2d(len[k]);
      t[ts::kNumLengths] = static_cast<float>(s.n_split) / ts::kMaxLengths;
      break;
    }
    case StepKind::kFollowFusedSplit: {
      t[ts::kIter] = id(s.iter_id);
      if (!s.ids.empty()) t[ts::kSrcStep] = id(s.ids.front());
      t[ts::kLevel] = id(s.level);
      t[ts::kInnerToOuter] = s.inner_to_outer ? 1.0f : 0.0f;
      double len = 0;
      if (resolve_follow_fused_split(steps, s, &len)) t[ts::kLengths] = log1p2d(len);
      t[ts::kNumLengths] = 1.0f / ts::kMaxLengths;
      t[ts::kListLength] = log1p2(lt, static_cast<std::int64_t>(s.ids.size()));
      break;
    }
    case StepKind::kStorageAlign:
      t[ts::kIter] = id(s.iter_id);
      t[ts::kAlignFactor] = log1p2(lt, s.factor);
      t[ts::kAlignOffset] = log1p2(lt, s.offset);
      break;
    case StepKind::kComputeAt:
      t[ts::kTargetStage] = id(s.target_stage_id);
      t[ts::kTargetIter] = id(s.target_iter_id);
      break;
    case StepKind::kComputeInline:
    case StepKind::kComputeRoot: break;
    case StepKind::kCacheRead:
      t[ts::kScope + scope_index(s.scope_name)] = 1.0f;
      if (!s.ids.empty()) t[ts::kTargetStage] = id(s.ids.front());
      t[ts::kListLength] = log1p2(lt, static_cast<std::int64_t>(s.ids.size()));
      break;
    case StepKind::kCacheWrite: t[ts::kScope + scope_index(s.scope_name)] = 1.0f; break;
    case StepKind::kRfactor:
      t[ts::kIter] = id(s.iter_id);
      t[ts::kRfactorIter] = id(s.factor_iter_id);
      break;
    case StepKind::kUnknown: break;
  }
}

}  // namespace

int encode_tokens(std::span<const Step> steps, int max_len, float* out) {
  assert(max_len > 0 && out != nullptr);
  const auto& lt = log_table();
  std::memset(out, 0, sizeof(float) * static_cast<std::size_t>(max_len) * kTokenDim);
  const int n = static_cast<int>(std::min<std::size_t>(steps.size(), static_cast<std::size_t>(max_len)));
  for (int i = 0; i < n; ++i) {
    encode_step(steps, static_cast<std::size_t>(i), lt, out + static_cast<std::size_t>(i) * kTokenDim);
  }
  return n;
}

void encode_tokens_batch(std::span<const Record> records, int max_len, float* tokens, float* mask,
                         std::int32_t* lengths) {
  assert(max_len > 0 && tokens != nullptr);
  const std::size_t stride = static_cast<std::size_t>(max_len) * kTokenDim;
  for (std::size_t r = 0; r < records.size(); ++r) {
    const int n = encode_tokens(records[r].steps, max_len, tokens + r * stride);
    if (mask != nullptr) {
      float* m = mask + r * static_cast<std::size_t>(max_len);
      for (int k = 0; k < max_len; ++k) m[k] = k < n ? 1.0f : 0.0f;
    }
    if (lengths != nullptr) lengths[r] = n;
  }
}

// ---------------------------------------------------------------------------
// The workload token.

namespace {

// The shape of a tensor argument; false when `v` is not a list of numbers.
bool shape_of(const boost::json::value& v, std::vector<double>* dims) {
  const boost::json::array* a = v.if_array();
  if (a == nullptr || a->empty()) return false;
  dims->clear();
  for (const boost::json::value& d : *a) {
    if (!d.is_number()) return false;
    dims->push_back(d.to_number<double>());
  }
  return true;
}

}  // namespace

void encode_workload(std::string_view workload_key, float* out) {
  assert(out != nullptr);
  std::memset(out, 0, sizeof(float) * kTokenDim);
  boost::system::error_code ec;
  const boost::json::value key = boost::json::parse(workload_key, ec);
  if (ec || !key.is_array()) return;
  const boost::json::array& args = key.get_array();
  std::vector<std::vector<double>> tensors;
  std::vector<double> scalars, dims;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (shape_of(args[i], &dims)) {
      tensors.push_back(dims);
    } else if (args[i].is_number()) {
      scalars.push_back(args[i].to_number<double>());
    }
  }
  using namespace workload_slot;
  out[kTensors] = static_cast<float>(tensors.size()) / 8.0f;
  out[kScalars] = static_cast<float>(scalars.size()) / 8.0f;
  double total = 0;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    double elements = 1;
    for (double d : tensors[t]) elements *= std::max(d, 0.0);
    total += elements;
    if (t >= kWorkloadTensors) continue;
    out[kElements + t] = log1p2d(elements) / 32.0f;
    out[kRanks + t] = static_cast<float>(tensors[t].size()) / 8.0f;
  }
  if (!tensors.empty()) {
    for (std::size_t d = 0; d < std::min<std::size_t>(tensors.back().size(), kWorkloadDims); ++d)
      out[kLastDims + d] = log1p2d(tensors.back()[d]) / 16.0f;
    for (std::size_t d = 0; d < std::min<std::size_t>(tensors.front().size(), kWorkloadDims); ++d)
      out[kFirstDims + d] = log1p2d(tensors.front()[d]) / 16.0f;
  } else if (!scalars.empty()) {
    total = 1;
    for (double x : scalars) total *= std::max(x, 1.0);
  }
  for (std::size_t s = 0; s < std::min<std::size_t>(scalars.size(), kWorkloadScalars); ++s)
    out[kScalarValues + s] = log1p2d(scalars[s]) / 16.0f;
  out[kSize] = log1p2d(total) / 32.0f;
}

// ---------------------------------------------------------------------------
// TLP.

namespace {

using TlpVocab = std::array<std::int8_t, kNumStepKinds>;

constexpr TlpVocab make_vocab(std::initializer_list<StepKind> kinds) {
  TlpVocab v{};
  for (auto& x : v) x = -1;
  std::int8_t slot = 0;
  for (StepKind k : kinds) v[static_cast<std::size_t>(k)] = slot++;
  return v;
}

constexpr TlpVocab kTlpCpuVocab =
    make_vocab({StepKind::kSplit, StepKind::kAnnotation, StepKind::kFollowSplit, StepKind::kReorder, StepKind::kFuse,
                StepKind::kComputeInline, StepKind::kComputeAt, StepKind::kPragma, StepKind::kComputeRoot,
                StepKind::kRfactor, StepKind::kCacheWrite});
constexpr TlpVocab kTlpGpuVocab =
    make_vocab({StepKind::kSplit, StepKind::kAnnotation, StepKind::kFollowSplit, StepKind::kReorder, StepKind::kFuse,
                StepKind::kComputeInline, StepKind::kComputeAt, StepKind::kPragma, StepKind::kCacheRead,
                StepKind::kFollowFusedSplit, StepKind::kCacheWrite});

float tlp_unroll_index(std::string_view pragma) {
  switch (auto_unroll_value(pragma)) {
    case 0: return 1;
    case 16: return 2;
    case 64: return 3;
    case 512: return 4;
    case 1024: return 5;
    default: return 0;
  }
}

float tlp_chw_scope(std::string_view s) {
  if (s == "local") return 1;
  if (s == "shared") return 2;
  if (s == "global") return 3;
  return 0;
}

// Appends values to one TLP row, dropping those past emb_size.
struct TlpRow {
  float* row;
  int pos;
  int end;
  void push(double v) {
    if (pos < end) row[pos] = static_cast<float>(v);
    ++pos;
  }
  template <typename Int>
  void push_list(const std::vector<Int>& xs) {
    for (Int x : xs) push(static_cast<double>(x));
  }
};

}  // namespace

int encode_tlp(std::span<const Step> steps, const TlpConfig& c, float* out) {
  assert(c.seq_len > 0 && c.emb_size > kTlpKindSlots && out != nullptr);
  const TlpVocab& vocab = c.vocabulary == TlpVocabulary::kGpu ? kTlpGpuVocab : kTlpCpuVocab;
  std::memset(out, 0, sizeof(float) * static_cast<std::size_t>(c.seq_len) * static_cast<std::size_t>(c.emb_size));
  const int n = static_cast<int>(std::min<std::size_t>(steps.size(), static_cast<std::size_t>(c.seq_len)));
  for (int i = 0; i < n; ++i) {
    const Step& s = steps[static_cast<std::size_t>(i)];
    float* row = out + static_cast<std::size_t>(i) * static_cast<std::size_t>(c.emb_size);
    const std::int8_t slot = vocab[static_cast<std::size_t>(s.kind)];
    if (slot >= 0) row[slot] = 1.0f;
    TlpRow r{row, kTlpKindSlots, c.emb_size};
    r.push(s.stage_id);
    switch (s.kind) {
      case StepKind::kAnnotation:
        r.push(s.iter_id);
        r.push(s.annotation);
        break;
      case StepKind::kFuse:
      case StepKind::kReorder: r.push_list(s.ids); break;
      case StepKind::kPragma:
        r.push(s.iter_id);
        r.push(tlp_unroll_index(s.pragma_type));
        break;
      case StepKind::kSplit:
        r.push(s.iter_id);
        r.push(static_cast<double>(s.extent));
        r.push_list(s.lengths);
        r.push(s.inner_to_outer ? 1 : 0);
        break;
      case StepKind::kFollowSplit:
        r.push(s.iter_id);
        r.push(s.src_step_id);
        r.push(s.n_split);
        break;
      case StepKind::kFollowFusedSplit:
        r.push(s.iter_id);
        r.push_list(s.ids);
        r.push(s.level);
        r.push(s.inner_to_outer ? 1 : 0);
        break;
      case StepKind::kStorageAlign:
        r.push(s.iter_id);
        r.push(s.factor);
        r.push(s.offset);
        break;
      case StepKind::kComputeAt:
        r.push(s.target_stage_id);
        r.push(s.target_iter_id);
        break;
      case StepKind::kComputeInline:
      case StepKind::kComputeRoot:
      case StepKind::kUnknown: break;
      case StepKind::kCacheRead:
        r.push(s.scope_name == "shared" ? 1 : 0);
        r.push_list(s.ids);
        break;
      case StepKind::kCacheWrite: r.push(tlp_chw_scope(s.scope_name)); break;
      case StepKind::kRfactor:
        r.push(s.iter_id);
        r.push(s.factor_iter_id);
        break;
    }
  }
  return n;
}

// ---------------------------------------------------------------------------
// Hardware descriptor.

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

bool any_of_names(std::string_view s, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (s == n) return true;
  }
  return false;
}

bool has_attr(const TargetInfo& t, std::string_view prefix) {
  for (const std::string& a : t.mattr) {
    std::string_view v(a);
    if (!v.empty() && v.front() == '+') {
      v.remove_prefix(1);
    } else if (!v.empty() && v.front() == '-') {
      continue;  // disabled feature
    }
    if (starts_with(v, prefix)) return true;
  }
  return false;
}

// The target kind's one-hot (features.h, slots 12..18): six named kinds, then "other".
constexpr std::string_view kTargetKinds[] = {"llvm", "cuda", "rocm", "opencl", "vulkan", "metal"};
constexpr std::size_t kTargetKindFirst = 12, kTargetKindSlots = std::size(kTargetKinds) + 1;

float log_norm(std::int64_t x, float scale) {
  return x <= 0 ? 0.0f : static_cast<float>(std::log2(1.0 + static_cast<double>(x))) / scale;
}

}  // namespace

void encode_hardware(const std::optional<HardwareParams>& hw, std::string_view target, float* out) {
  assert(out != nullptr);
  std::fill(out, out + kHardwareDim, 0.0f);
  const TargetInfo t = parse_target(target);

  if (hw) {
    out[0] = log_norm(hw->num_cores, 8);
    out[1] = log_norm(hw->vector_unit_bytes, 8);
    out[2] = log_norm(hw->cache_line_bytes, 8);
    out[3] = log_norm(hw->max_shared_memory_per_block, 20);
    out[4] = log_norm(hw->max_local_memory_per_block, 32);
    out[5] = log_norm(hw->max_threads_per_block, 12);
    out[6] = log_norm(hw->max_vthread_extent, 8);
    out[7] = log_norm(hw->warp_size, 8);
    out[8] = 1;
  }
  out[9] = t.has_key("cpu") ? 1.0f : 0.0f;
  out[10] = t.has_key("gpu") ? 1.0f : 0.0f;
  out[11] = t.has_key("arm_cpu") ? 1.0f : 0.0f;

  std::size_t kind_slot = kTargetKindSlots - 1;  // other
  for (std::size_t k = 0; k < std::size(kTargetKinds); ++k) {
    if (t.kind == kTargetKinds[k]) kind_slot = k;
  }
  if (t.kind == "nvptx") kind_slot = 1;
  if (!t.kind.empty()) out[kTargetKindFirst + kind_slot] = 1;

  // ISA family and features.
  const std::string_view cpu = t.mcpu;
  const std::string_view triple = t.mtriple;
  const bool x86_cpu_name =
      starts_with(cpu, "core") || starts_with(cpu, "skylake") || starts_with(cpu, "icelake") ||
      starts_with(cpu, "znver") || starts_with(cpu, "x86-64") ||
      any_of_names(cpu, {"haswell", "broadwell", "cascadelake", "cooperlake", "tigerlake", "sapphirerapids",
                         "alderlake", "cannonlake", "knl", "knm", "nehalem", "sandybridge", "ivybridge"});
  const bool arm_cpu_name = starts_with(cpu, "cortex") || starts_with(cpu, "neoverse") || starts_with(cpu, "apple") ||
                            starts_with(cpu, "kryo") || cpu == "a64fx" || cpu == "carmel";
  const bool x86 =
      starts_with(triple, "x86_64") || starts_with(triple, "i386") || starts_with(triple, "i686") || x86_cpu_name;
  const bool arm64 = starts_with(triple, "aarch64") || starts_with(triple, "arm64");
  const bool arm = arm64 || starts_with(triple, "arm") || starts_with(triple, "thumb") || arm_cpu_name ||
                   t.has_key("arm_cpu") || has_attr(t, "neon");
  const bool riscv = starts_with(triple, "riscv");
  const bool nvptx = t.kind == "cuda" || t.kind == "nvptx";
  out[19] = x86 ? 1.0f : 0.0f;
  out[20] = arm ? 1.0f : 0.0f;
  out[21] = riscv ? 1.0f : 0.0f;
  out[22] = nvptx ? 1.0f : 0.0f;

  const bool avx512 = has_attr(t, "avx512") || starts_with(cpu, "skylake-avx512") || starts_with(cpu, "icelake") ||
                      any_of_names(cpu, {"cascadelake", "cooperlake", "tigerlake", "sapphirerapids", "znver4",
                                         "cannonlake", "knl", "knm", "x86-64-v4"});
  const bool avx2 = avx512 || has_attr(t, "avx2") ||
                    any_of_names(cpu, {"core-avx2", "haswell", "broadwell", "skylake", "alderlake", "znver1", "znver2",
                                       "znver3", "x86-64-v3"});
  const bool sve = has_attr(t, "sve") || any_of_names(cpu, {"neoverse-v1", "neoverse-n2", "neoverse-v2", "a64fx"});
  const bool neon = arm64 || has_attr(t, "neon") || arm_cpu_name || sve;
  const bool dot = has_attr(t, "avx512vnni") || has_attr(t, "avxvnni") || has_attr(t, "dotprod") ||
                   has_attr(t, "i8mm") || starts_with(cpu, "icelake") || starts_with(cpu, "apple") ||
                   any_of_names(cpu, {"cascadelake", "cooperlake", "tigerlake", "sapphirerapids", "alderlake", "znver4",
                                      "neoverse-n1", "neoverse-v1", "neoverse-n2", "neoverse-v2", "cortex-a55",
                                      "cortex-a75", "cortex-a76", "cortex-a77", "cortex-a78", "cortex-x1"});
  const bool fma = avx2 || has_attr(t, "fma") || neon;
  out[23] = avx2 ? 1.0f : 0.0f;
  out[24] = avx512 ? 1.0f : 0.0f;
  out[25] = neon ? 1.0f : 0.0f;
  out[26] = sve ? 1.0f : 0.0f;
  out[27] = dot ? 1.0f : 0.0f;
  out[28] = fma ? 1.0f : 0.0f;

  out[29] = static_cast<float>(t.cuda_sm()) / 100.0f;
  const std::int64_t cores = hw && hw->num_cores > 0 ? hw->num_cores : t.num_cores;
  out[30] = log_norm(cores, 8);
  const std::int64_t warp = hw && hw->warp_size > 0 ? hw->warp_size : t.thread_warp_size;
  out[31] = log_norm(warp, 8);
  const std::int64_t smem =
      hw && hw->max_shared_memory_per_block > 0 ? hw->max_shared_memory_per_block : t.max_shared_memory_per_block;
  out[32] = log_norm(smem, 20);
  const std::int64_t threads = t.max_num_threads > 0 ? t.max_num_threads : (hw ? hw->max_threads_per_block : 0);
  out[33] = log_norm(threads, 12);
  std::int64_t vec = hw && hw->vector_unit_bytes > 0 ? hw->vector_unit_bytes : 0;
  if (vec == 0) vec = avx512 ? 64 : avx2 ? 32 : (x86 || neon) ? 16 : 0;
  out[34] = log_norm(vec, 8);
  out[35] = !t.mcpu.empty() || !t.arch.empty() ? 1.0f : 0.0f;
}

bool same_target_kind(std::span<const float> a, std::span<const float> b) {
  constexpr std::size_t kEnd = kTargetKindFirst + kTargetKindSlots;
  if (a.size() < kEnd || b.size() < kEnd) return false;
  return std::equal(a.begin() + kTargetKindFirst, a.begin() + kEnd, b.begin() + kTargetKindFirst);
}

}  // namespace tcl::core
