// trainer/fast_inference.cc — StudentInference: the weights copied out of the
// torch module into the packed arena, input checks, chunking, the threads of
// a call and the scratch pool. The kernels are in fast_inference_kernels.cc.
#include "trainer/fast_inference.h"

#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "core/random.h"
#include "core/thread_annotations.h"
#include "trainer/adapter.h"
#include "trainer/fast_inference_internal.h"
#include "trainer/score_model.h"

#if defined(__x86_64__) || defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace tcl::trainer {
namespace {

using fast::Dims;
using fast::Net;
using fast::pad_floats;

// Programs per chunk at most (bounds the per-program scratch when many
// programs are empty).
constexpr int64_t kChunkPrograms = 128;

std::string size_text(size_t got, int64_t want) {
  return "got " + std::to_string(got) + " values, expected " + std::to_string(want);
}

// Flushes denormal results and operands to zero on this thread while in
// scope (x86 MXCSR FTZ | DAZ), restoring the caller's mode after. The scan's
// decaying states reach denormals routinely, and each denormal operation
// costs ~100 cycles; values below 1.2e-38 change no score.
class DenormalsAreZero {
 public:
#if defined(__x86_64__) || defined(__SSE__)
  DenormalsAreZero() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }
  ~DenormalsAreZero() { _mm_setcsr(saved_); }

 private:
  unsigned saved_;
#endif
};

Dims dims_of(const ModelConfig& c) {
  Dims d;
  d.tok = c.token_dim;
  d.desc = c.descriptor_dim;
  d.d = c.d_model;
  d.dp = pad_floats(d.d);
  d.di = c.expand * c.d_model;
  d.dip = pad_floats(d.di);
  d.ds = c.d_state;
  d.r = resolved_dt_rank(c);
  d.dc = c.d_conv;
  d.dbcp = pad_floats(d.r + 2 * d.ds);
  d.fh = c.film_hidden;
  d.fhp = pad_floats(d.fh);
  d.hh = c.head_hidden;
  d.hhp = pad_floats(d.hh);
  d.n_layers = c.n_layers;
  return d;
}

// The model's parameters by name, each float32 and contiguous.
class ParameterTable {
 public:
  explicit ParameterTable(const ScoreModel& model) {
    for (const auto& p : model.named_parameters()) {
      params_[p.key()] = p.value().detach().to(torch::kCPU, torch::kFloat).contiguous();
    }
  }
  // The parameter `name` of exactly `shape`; kInternal otherwise.
  Result<const float*> get(const std::string& name, std::vector<int64_t> shape) const {
    const auto it = params_.find(name);
    if (it == params_.end()) return Status::internal("fast inference: no parameter '" + name + "'");
    if (it->second.sizes().vec() != shape) {
      return Status::internal("fast inference: parameter '" + name + "' has shape " + c10::str(it->second.sizes()) +
                              ", expected " + c10::str(torch::IntArrayRef(shape)));
    }
    return it->second.data_ptr<float>();
  }

 private:
  std::map<std::string, torch::Tensor> params_;
};

// Hands out consecutive, 16-float aligned blocks of the arena.
class ArenaCursor {
 public:
  explicit ArenaCursor(float* base) : p_(base) {}
  float* take(int64_t n) {
    float* q = p_;
    p_ += pad_floats(n);
    return q;
  }
  int64_t used(const float* base) const { return p_ - base; }

 private:
  float* p_;
};

// dst[k · ld + col0 + o] = W[o, k] for W [out, in] row-major.
void copy_transposed(const float* W, int64_t out, int64_t in, float* dst, int64_t ld, int64_t col0 = 0) {
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t k = 0; k < in; ++k) dst[k * ld + col0 + o] = W[o * in + k];
  }
}

void copy_vector(const float* v, int64_t n, float* dst) { std::copy(v, v + n, dst); }

// Floats the arena needs for `d` (each block padded to 16 floats, as taken).
int64_t arena_floats(const Dims& d) {
  int64_t n = pad_floats(d.tok * d.dp) + d.dp;
  const int64_t per_layer = d.dp + d.d * 2 * d.dip + d.dc * d.dip + d.dip + pad_floats(d.di * d.dbcp) +
                            pad_floats(d.r * d.dip) + d.dip + d.ds * d.dip + d.dip + pad_floats(d.di * d.dp);
  n += d.n_layers * per_layer;
  n += d.dp + pad_floats(d.desc * d.fhp) + d.fhp + pad_floats(d.fh * 2 * d.dp) + 2 * d.dp + pad_floats(d.d * d.hhp) +
       d.hhp + d.hhp;
  return n;
}

// Looks up parameter `name` of shape {...} into `const float* var`; returns
// its status from the enclosing function when missing or misshapen.
#define TCL_PARAM(var, name, ...)                                 \
  Result<const float*> var##_r = params.get(name, {__VA_ARGS__}); \
  if (!var##_r) return var##_r.status();                          \
  const float* var = *var##_r

// The token projection, transposed to [tok, dp], and its bias.
Status pack_token_proj(const ParameterTable& params, ArenaCursor* cur, Net* net) {
  const Dims& d = net->dims;
  TCL_PARAM(w, "token_proj.weight", d.d, d.tok);
  TCL_PARAM(b, "token_proj.bias", d.d);
  float* wt = cur->take(d.tok * d.dp);
  float* bt = cur->take(d.dp);
  copy_transposed(w, d.d, d.tok, wt, d.dp);
  copy_vector(b, d.d, bt);
  net->tok_t = wt;
  net->tok_b = bt;
  return Status::ok();
}

// Mamba block `i` (parameters "blocks.<i>.*"), appended to net->layers.
Status pack_layer(const ParameterTable& params, int64_t i, ArenaCursor* cur, Net* net) {
  const Dims& d = net->dims;
  const std::string pre = "blocks." + std::to_string(i) + ".";
  TCL_PARAM(norm, pre + "norm.weight", d.d);
  TCL_PARAM(in_w, pre + "in_proj.weight", 2 * d.di, d.d);
  TCL_PARAM(conv_w, pre + "conv_weight", d.di, 1, d.dc);
  TCL_PARAM(conv_b, pre + "conv_bias", d.di);
  TCL_PARAM(x_w, pre + "x_proj.weight", d.r + 2 * d.ds, d.di);
  TCL_PARAM(dt_w, pre + "dt_proj.weight", d.di, d.r);
  TCL_PARAM(dt_b, pre + "dt_proj.bias", d.di);
  TCL_PARAM(a_log, pre + "A_log", d.di, d.ds);
  TCL_PARAM(skip, pre + "D", d.di);
  TCL_PARAM(out_w, pre + "out_proj.weight", d.d, d.di);

  float* norm_p = cur->take(d.dp);
  copy_vector(norm, d.d, norm_p);
  float* in_t = cur->take(d.d * 2 * d.dip);
  copy_transposed(in_w, d.di, d.d, in_t, 2 * d.dip, 0);                   // x'
  copy_transposed(in_w + d.di * d.d, d.di, d.d, in_t, 2 * d.dip, d.dip);  // z
  float* conv_t = cur->take(d.dc * d.dip);
  for (int64_t c = 0; c < d.di; ++c) {
    for (int64_t j = 0; j < d.dc; ++j) conv_t[j * d.dip + c] = conv_w[c * d.dc + j];
  }
  float* conv_bp = cur->take(d.dip);
  copy_vector(conv_b, d.di, conv_bp);
  float* x_t = cur->take(d.di * d.dbcp);
  copy_transposed(x_w, d.r + 2 * d.ds, d.di, x_t, d.dbcp);
  float* dt_t = cur->take(d.r * d.dip);
  copy_transposed(dt_w, d.di, d.r, dt_t, d.dip);
  float* dt_bp = cur->take(d.dip);
  copy_vector(dt_b, d.di, dt_bp);
  // A = -exp(A_log) as torch computes it in float, then scaled to base 2.
  float* a2_t = cur->take(d.ds * d.dip);
  for (int64_t c = 0; c < d.di; ++c) {
    for (int64_t s = 0; s < d.ds; ++s) {
      const float a = -std::exp(a_log[c * d.ds + s]);
      a2_t[s * d.dip + c] = a * 1.44269504088896341f;
    }
  }
  float* skip_p = cur->take(d.dip);
  copy_vector(skip, d.di, skip_p);
  float* out_t = cur->take(d.di * d.dp);
  copy_transposed(out_w, d.d, d.di, out_t, d.dp);

  fast::LayerWeights l;
  l.norm = norm_p;
  l.in_t = in_t;
  l.conv_t = conv_t;
  l.conv_b = conv_bp;
  l.x_t = x_t;
  l.dt_t = dt_t;
  l.dt_b = dt_bp;
  l.a2_t = a2_t;
  l.skip = skip_p;
  l.out_t = out_t;
  net->layers.push_back(l);
  return Status::ok();
}

// The final norm and the conditioned head (FiLM from the descriptor, then
// the two-layer scorer).
Status pack_head(const ParameterTable& params, ArenaCursor* cur, Net* net) {
  const Dims& d = net->dims;
  TCL_PARAM(norm_f, "norm_f.weight", d.d);
  TCL_PARAM(fi_w, "head.film_in.weight", d.fh, d.desc);
  TCL_PARAM(fi_b, "head.film_in.bias", d.fh);
  TCL_PARAM(fo_w, "head.film_out.weight", 2 * d.d, d.fh);
  TCL_PARAM(fo_b, "head.film_out.bias", 2 * d.d);
  TCL_PARAM(hi_w, "head.head_in.weight", d.hh, d.d);
  TCL_PARAM(hi_b, "head.head_in.bias", d.hh);
  TCL_PARAM(ho_w, "head.head_out.weight", 1, d.hh);
  TCL_PARAM(ho_b, "head.head_out.bias", 1);

  float* norm_fp = cur->take(d.dp);
  copy_vector(norm_f, d.d, norm_fp);
  float* fi_t = cur->take(d.desc * d.fhp);
  copy_transposed(fi_w, d.fh, d.desc, fi_t, d.fhp);
  float* fi_bp = cur->take(d.fhp);
  copy_vector(fi_b, d.fh, fi_bp);
  float* fo_t = cur->take(d.fh * 2 * d.dp);
  copy_transposed(fo_w, d.d, d.fh, fo_t, 2 * d.dp, 0);                  // γ
  copy_transposed(fo_w + d.d * d.fh, d.d, d.fh, fo_t, 2 * d.dp, d.dp);  // β
  float* fo_bp = cur->take(2 * d.dp);
  copy_vector(fo_b, d.d, fo_bp);
  copy_vector(fo_b + d.d, d.d, fo_bp + d.dp);
  float* hi_t = cur->take(d.d * d.hhp);
  copy_transposed(hi_w, d.hh, d.d, hi_t, d.hhp);
  float* hi_bp = cur->take(d.hhp);
  copy_vector(hi_b, d.hh, hi_bp);
  float* ho_wp = cur->take(d.hhp);
  copy_vector(ho_w, d.hh, ho_wp);

  net->norm_f = norm_fp;
  net->film_in_t = fi_t;
  net->film_in_b = fi_bp;
  net->film_out_t = fo_t;
  net->film_out_b = fo_bp;
  net->head_in_t = hi_t;
  net->head_in_b = hi_bp;
  net->head_out_w = ho_wp;
  net->head_out_b = ho_b[0];
  return Status::ok();
}

#undef TCL_PARAM

// Builds the packed arena from the student's parameters (names as
// registered by MambaStudent, MambaBlockImpl and ConditionedHeadImpl), in
// the order arena_floats counts them.
Status pack_weights(const ScoreModel& model, Net* net) {
  const ParameterTable params(model);
  net->arena = fast::AlignedFloats(arena_floats(net->dims));
  ArenaCursor cur(net->arena.data());
  if (Status s = pack_token_proj(params, &cur, net); !s) return s;
  for (int64_t i = 0; i < net->dims.n_layers; ++i) {
    if (Status s = pack_layer(params, i, &cur, net); !s) return s;
  }
  if (Status s = pack_head(params, &cur, net); !s) return s;
  if (cur.used(net->arena.data()) != net->arena.size()) {
    return Status::internal("fast inference: weight arena size mismatch");  // a bug in arena_floats
  }
  return Status::ok();
}

SimdLevel best_simd_level() {
  if (simd_level_supported(SimdLevel::kAvx512)) return SimdLevel::kAvx512;
  if (simd_level_supported(SimdLevel::kAvx2)) return SimdLevel::kAvx2;
  return SimdLevel::kBaseline;
}

}  // namespace

std::string_view simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAuto: return "auto";
    case SimdLevel::kBaseline: return "baseline";
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx512: return "avx512";
  }
  return "unknown";
}

bool simd_level_supported(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAuto:
    case SimdLevel::kBaseline: return true;
#if defined(__x86_64__) && defined(__GNUC__)
    case SimdLevel::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case SimdLevel::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    default: return false;
#endif
  }
  return false;
}

struct StudentInference::Impl {
  ModelConfig config;
  Net net;
  SimdLevel simd = SimdLevel::kBaseline;
  int32_t threads = 1;
  int64_t chunk_tokens = 0;
  int64_t scratch_rows = 0;  // max(chunk_tokens, max_len): a chunk always fits

  mutable core::Mutex pool_mu;
  mutable std::vector<std::unique_ptr<fast::Scratch>> pool GUARDED_BY(pool_mu);

  // A scratch from the pool, or a new one; null when out of memory.
  std::unique_ptr<fast::Scratch> acquire() const {
    {
      core::MutexLock lock(pool_mu);
      if (!pool.empty()) {
        std::unique_ptr<fast::Scratch> s = std::move(pool.back());
        pool.pop_back();
        return s;
      }
    }
    try {
      return std::make_unique<fast::Scratch>(net.dims, scratch_rows, kChunkPrograms);
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
  }
  void release(std::unique_ptr<fast::Scratch> s) const {
    core::MutexLock lock(pool_mu);
    pool.push_back(std::move(s));
  }

  // Scores or embeddings (exactly one non-null) for a checked batch.
  Status run(const FeatureBatch& b, float* scores, float* embeddings) const {
    if (b.count == 0) return Status::ok();
    const Dims& d = net.dims;

    // Chunks: consecutive programs, about chunk_tokens real tokens each.
    std::vector<int64_t> starts;
    starts.reserve(static_cast<size_t>(b.count / 8 + 2));
    {
      int64_t tokens = 0, programs = 0;
      for (int64_t i = 0; i < b.count; ++i) {
        const int64_t len = b.lengths[i];
        if (programs == 0 || tokens + len > chunk_tokens || programs == kChunkPrograms) {
          starts.push_back(i);
          tokens = 0;
          programs = 0;
        }
        tokens += len;
        ++programs;
      }
      starts.push_back(b.count);
    }
    const int64_t n_chunks = static_cast<int64_t>(starts.size()) - 1;

    fast::CallArgs call;
    call.tokens = b.tokens.data();
    call.seq_len = b.seq_len;
    call.lengths = b.lengths.data();
    call.scores = scores;
    call.embeddings = embeddings;
    // One descriptor for all: its (γ, β) once per call.
    std::vector<float> film;
    if (static_cast<int64_t>(b.descriptors.size()) == d.desc) {
      std::vector<float> hidden(static_cast<size_t>(d.fhp));
      film.resize(static_cast<size_t>(2 * d.dp));
      fast::shared_film(simd, net, b.descriptors.data(), hidden.data(), film.data());
      call.shared_film = film.data();
    } else {
      call.descriptors = b.descriptors.data();
    }

    std::atomic<int64_t> next{0}, done{0};
    const auto work = [&] {
      const DenormalsAreZero ftz;
      std::unique_ptr<fast::Scratch> s = acquire();
      if (s == nullptr) return;  // the other threads take the chunks
      for (int64_t c = next.fetch_add(1); c < n_chunks; c = next.fetch_add(1)) {
        fast::run_chunk(simd, net, call, starts[static_cast<size_t>(c)], starts[static_cast<size_t>(c + 1)], *s);
        done.fetch_add(1);
      }
      release(std::move(s));
    };
    const int64_t n_threads = std::min<int64_t>(threads, n_chunks);
    std::vector<std::thread> helpers;
    helpers.reserve(static_cast<size_t>(n_threads - 1));
    for (int64_t i = 1; i < n_threads; ++i) {
      try {
        helpers.emplace_back(work);
      } catch (const std::system_error&) {
        break;  // fewer threads; the rest share the chunks
      }
    }
    work();
    for (std::thread& t : helpers) t.join();
    if (done.load() != n_chunks) {
      // Every thread failed to get scratch memory (the caller's included).
      return Status::resource_exhausted("fast inference: out of memory for scratch buffers");
    }
    return Status::ok();
  }
};

StudentInference::StudentInference(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StudentInference::~StudentInference() = default;

Result<std::unique_ptr<StudentInference>> StudentInference::create(const ScoreModel& model,
                                                                   const InferenceOptions& options) {
  const ModelConfig& config = model.config();
  if (config.kind != ModelKind::kMamba) {
    return Status::invalid_argument("fast inference: model kind '" + std::string(model_kind_name(config.kind)) +
                                    "' has no fast path (only 'mamba')");
  }
  if (Status s = validate(config); !s) return s;
  if (has_adapter(model)) {  // the fast path reads W alone: fold first (trainer/adapter.h)
    return Status::invalid_argument("fast inference: the model has an unfolded adapter");
  }
  if (options.threads < 0) return Status::invalid_argument("fast inference: threads < 0");
  if (options.chunk_tokens < 1) return Status::invalid_argument("fast inference: chunk_tokens < 1");
  if (!simd_level_supported(options.simd)) {
    return Status::invalid_argument("fast inference: this CPU does not support " +
                                    std::string(simd_level_name(options.simd)));
  }
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->simd = options.simd == SimdLevel::kAuto ? best_simd_level() : options.simd;
  impl->threads = options.threads > 0 ? options.threads
                                      : std::max<int32_t>(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
  impl->chunk_tokens = options.chunk_tokens;
  impl->scratch_rows = std::max<int64_t>(options.chunk_tokens, config.max_len);
  impl->net.dims = dims_of(config);
  try {
    torch::NoGradGuard no_grad;
    if (Status s = pack_weights(model, &impl->net); !s) return s;
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("fast inference: out of memory for the weights");
  } catch (const std::exception& e) {
    return Status::internal(std::string("fast inference: ") + e.what());
  }
  return std::unique_ptr<StudentInference>(new StudentInference(std::move(impl)));
}

Result<std::unique_ptr<StudentInference>> StudentInference::create(const CostModel& model,
                                                                   const InferenceOptions& options) {
  return create(*model.score_model(), options);
}

const ModelConfig& StudentInference::config() const { return impl_->config; }
SimdLevel StudentInference::simd_level() const { return impl_->simd; }
int32_t StudentInference::threads() const { return impl_->threads; }
int64_t StudentInference::weight_bytes() const { return impl_->net.arena.size() * static_cast<int64_t>(sizeof(float)); }

Status StudentInference::predict(const FeatureBatch& batch, std::span<float> scores) const {
  if (static_cast<int64_t>(scores.size()) != batch.count) {
    return Status::invalid_argument("predict: scores: " + size_text(scores.size(), batch.count));
  }
  if (Status s = check_batch(batch, impl_->config); !s) return s;
  try {
    return impl_->run(batch, scores.data(), nullptr);
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("predict: out of memory");
  }
}

Status StudentInference::embed(const FeatureBatch& batch, std::span<float> embeddings) const {
  const int64_t d_model = impl_->config.d_model;
  if (static_cast<int64_t>(embeddings.size()) != batch.count * d_model) {
    return Status::invalid_argument("embed: embeddings: " + size_text(embeddings.size(), batch.count * d_model));
  }
  if (Status s = check_batch(batch, impl_->config); !s) return s;
  try {
    return impl_->run(batch, nullptr, embeddings.data());
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("embed: out of memory");
  }
}

namespace {

// Masks come from splitmix64 (core/random.h) used counter-based: the mask of
// (program, sample, unit) depends on nothing else, so results do not depend
// on the order of evaluation.
using core::splitmix64;
inline float unit_float(uint64_t x) { return static_cast<float>(x >> 40) * (1.0f / 16777216.0f); }

}  // namespace

Status StudentInference::head_mc(std::span<const float> embeddings, int64_t count, int32_t samples, uint64_t seed,
                                 std::span<float> scores) const {
  const Dims& d = impl_->net.dims;
  const fast::Net& net = impl_->net;
  if (count < 0 || samples < 1) return Status::invalid_argument("head_mc: count < 0 or samples < 1");
  if (static_cast<int64_t>(embeddings.size()) != count * d.d) {
    return Status::invalid_argument("head_mc: embeddings: " + size_text(embeddings.size(), count * d.d));
  }
  if (static_cast<int64_t>(scores.size()) != count * samples) {
    return Status::invalid_argument("head_mc: scores: " + size_text(scores.size(), count * samples));
  }
  const float p = static_cast<float>(impl_->config.dropout);
  const float keep_scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  std::vector<float> x(static_cast<size_t>(d.d)), h(static_cast<size_t>(d.hhp));
  for (int64_t i = 0; i < count; ++i) {
    const float* e = embeddings.data() + i * d.d;
    for (int32_t s = 0; s < samples; ++s) {
      const uint64_t stream =
          splitmix64(seed ^ splitmix64(static_cast<uint64_t>(i) * 0x100000001B3ull + static_cast<uint64_t>(s)));
      uint64_t counter = 0;
      for (int64_t k = 0; k < d.d; ++k) {
        x[k] = unit_float(splitmix64(stream + counter++)) < p ? 0.0f : e[k] * keep_scale;
      }
      std::copy(net.head_in_b, net.head_in_b + d.hhp, h.begin());
      for (int64_t k = 0; k < d.d; ++k) {
        const float xk = x[k];
        if (xk == 0.0f) continue;
        const float* w = net.head_in_t + k * d.hhp;
        for (int64_t j = 0; j < d.hhp; ++j) h[j] += xk * w[j];
      }
      float out = net.head_out_b;
      for (int64_t j = 0; j < d.hh; ++j) {
        float v = h[j] / (1.0f + std::exp(-h[j]));  // SiLU
        v = unit_float(splitmix64(stream + counter++)) < p ? 0.0f : v * keep_scale;
        out += v * net.head_out_w[j];
      }
      scores[static_cast<size_t>(s * count + i)] = out;
    }
  }
  return Status::ok();
}

}  // namespace tcl::trainer
