// trainer/fast_inference_kernels.cc — the fast path's kernels, torch-free,
// llama.cpp style: shapes are checked once by the caller (StudentInference),
// kernels run plain indexed loops over contiguous buffers and allocate
// nothing. Vectors are GCC vector types of W floats;
// every kernel is an always-inline template, instantiated three times inside
// target-attributed wrappers (AVX-512: W = 16, AVX2 + FMA: W = 8, baseline
// x86-64: W = 4), so each set gets its own instruction set and register
// tiling while the source stays one. Built with -ffp-contract=fast: a·b + c
// becomes one FMA where the target has it.
//
// Per chunk (see run_chunk_with): pack the programs' real tokens, then
//   h = token_proj(x)                                      gemm
//   per layer: hn = RMSNorm(h); xz = hn · in_projᵀ         rmsnorm, gemm
//              u = SiLU(causal depthwise conv(x'))         conv_silu (per program)
//              dbc = u · x_projᵀ                           gemm
//              Δ = softplus(dt_proj(dbc[:, :r]));
//              u = (scan(u, Δ, A, B, C) + D·u) · SiLU(z)   scan_gate (per program)
//              h += u · out_projᵀ                          gemm (accumulating)
//   pooled = mean over the program's rows of RMSNorm(h)    pool
//   e = pooled ⊙ (1 + γ) + β; score = head(e)              gemm, silu, condition, head
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>

#include "trainer/fast_inference_internal.h"

namespace tcl::trainer::fast {

AlignedFloats::AlignedFloats(int64_t count) : size_(count) {
  const size_t bytes = (static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(float) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, bytes);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  data_.reset(static_cast<float*>(p));
}

Scratch::Scratch(const Dims& d, int64_t rows_in, int64_t programs_in)
    : rows(rows_in), programs(programs_in), offsets(static_cast<size_t>(programs_in + 1)) {
  const int64_t per_row = pad_floats(d.tok) + 2 * d.dp + 2 * d.dip + d.dip + d.dbcp;
  const int64_t per_program = d.dp + d.fhp + 2 * d.dp + d.dp + d.hhp;
  mem = AlignedFloats(rows * per_row + d.ds * d.dip + programs * per_program);
  float* p = mem.data();
  const auto take = [&p](int64_t n) {
    float* q = p;
    p += n;
    return q;
  };
  // Every size is a multiple of 16 floats, so every block stays 64-byte aligned.
  x = take(rows * pad_floats(d.tok));
  h = take(rows * d.dp);
  hn = take(rows * d.dp);
  xz = take(rows * 2 * d.dip);
  u = take(rows * d.dip);
  dbc = take(rows * d.dbcp);
  state = take(d.ds * d.dip);
  pooled = take(programs * d.dp);
  film_hidden = take(programs * d.fhp);
  film = take(programs * 2 * d.dp);
  emb = take(programs * d.dp);
  head_hidden = take(programs * d.hhp);
}

namespace {

#define TCL_INLINE inline __attribute__((always_inline))

// W-float vectors. Fu is the unaligned, aliasing view used to load from and
// store to float buffers.
// typedef, not `using`: GCC 12 drops vector_size from an alias-declaration
// of a dependent type (F would be a plain float), and clang its aligned(4).
// NOLINTBEGIN(modernize-use-using)
template <int W>
struct Lanes {
  typedef float F __attribute__((vector_size(4 * W)));
  typedef int32_t I __attribute__((vector_size(4 * W)));
  typedef float Fu __attribute__((vector_size(4 * W), aligned(4), may_alias));
};
// NOLINTEND(modernize-use-using)

template <int W>
TCL_INLINE typename Lanes<W>::F load(const float* p) {
  return *reinterpret_cast<const typename Lanes<W>::Fu*>(p);
}
template <int W>
TCL_INLINE void store(float* p, typename Lanes<W>::F v) {
  *reinterpret_cast<typename Lanes<W>::Fu*>(p) = v;
}
template <int W>
TCL_INLINE typename Lanes<W>::F splat(float x) {
  return typename Lanes<W>::F{} + x;
}
template <int W>
TCL_INLINE float hsum(typename Lanes<W>::F v) {
  float s = 0;
  for (int i = 0; i < W; ++i) s += v[i];
  return s;
}

constexpr float kLog2e = 1.44269504088896341f;

// 2^t for t in [-126, 126]: t = k + f, k = round(t), |f| ≤ 1/2: 2^f from a
// degree-5 minimax polynomial (relative error 7.5e-8), 2^k from the
// exponent bits. Branch-free; the callers clamp t.
template <int W>
TCL_INLINE typename Lanes<W>::F exp2_in_range(typename Lanes<W>::F t) {
  using F = typename Lanes<W>::F;
  using I = typename Lanes<W>::I;
  // Adding 1.5·2^23 rounds to an integer: s = 1.5·2^23 + k with bits(s) =
  // bits(1.5·2^23) + k. The low 9 bits of bits(1.5·2^23) are 0, so
  // bits(s) << 23 is exactly k << 23 (mod 2^32).
  const F shifter = splat<W>(12582912.0f);
  const F s = t + shifter;
  const F f = t - (s - shifter);
  F p = splat<W>(1.3276466822e-3f);
  p = p * f + 9.6755412916e-3f;
  p = p * f + 5.5507132895e-2f;
  p = p * f + 2.4022119725e-1f;
  p = p * f + 6.9314696706e-1f;
  p = p * f + 1.0000000717e+0f;
  const I scale = ((I)s << 23) + 0x3F800000;  // 2^k
  return p * (F)scale;
}

// 2^t for t ≤ 0; t below -126 gives 2^-126 (harmless where it is used: the
// scan's decay factors and 1/(1 + e^x) terms).
template <int W>
TCL_INLINE typename Lanes<W>::F exp2_nonpositive(typename Lanes<W>::F t) {
  using F = typename Lanes<W>::F;
  const F lo = splat<W>(-126.0f);
  t = t > lo ? t : lo;
  return exp2_in_range<W>(t);
}

// e^x for any x (clamped to [-87.3, 87.3]).
template <int W>
TCL_INLINE typename Lanes<W>::F exp_any(typename Lanes<W>::F x) {
  using F = typename Lanes<W>::F;
  F t = x * kLog2e;
  const F lo = splat<W>(-126.0f), hi = splat<W>(126.0f);
  t = t > lo ? t : lo;
  t = t < hi ? t : hi;
  return exp2_in_range<W>(t);
}

// x / (1 + e^-x), as torch's silu.
template <int W>
TCL_INLINE typename Lanes<W>::F silu(typename Lanes<W>::F x) {
  return x / (1.0f + exp_any<W>(-x));
}

// log(1 + v) for v in [0, 1], without forming 1 + v (which would lose v's
// low bits when v is small): for v ≤ √2 - 1 it is log1p(v) directly; above,
// log1p(v) = ln 2 + log1p((v - 1) / 2). log1p(x) on [√½ - 1, √2 - 1] is
// Cephes' logf polynomial (relative error ~1e-7).
template <int W>
TCL_INLINE typename Lanes<W>::F log1p_unit(typename Lanes<W>::F v) {
  using F = typename Lanes<W>::F;
  const F big = splat<W>(0.41421356237f);
  const auto high = v > big;
  const F x = high ? (v - 1.0f) * 0.5f : v;
  const F e = high ? splat<W>(1.0f) : F{};
  const F z = x * x;
  F p = splat<W>(7.0376836292e-2f);
  p = p * x - 1.1514610310e-1f;
  p = p * x + 1.1676998740e-1f;
  p = p * x - 1.2420140846e-1f;
  p = p * x + 1.4249322787e-1f;
  p = p * x - 1.6668057665e-1f;
  p = p * x + 2.0000714765e-1f;
  p = p * x - 2.4999993993e-1f;
  p = p * x + 3.3333331174e-1f;
  F y = p * x * z;
  y = y + e * -2.12194440e-4f;
  y = y - 0.5f * z;
  return x + y + e * 0.693359375f;
}

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|): torch's softplus (beta 1; its
// threshold 20 returns x, which this equals in float there).
template <int W>
TCL_INLINE typename Lanes<W>::F softplus(typename Lanes<W>::F x) {
  using F = typename Lanes<W>::F;
  const F zero{};
  const F neg_abs = x < zero ? x : -x;
  const F pos = x > zero ? x : zero;
  return pos + log1p_unit<W>(exp2_nonpositive<W>(neg_abs * kLog2e));
}

// --- matrix product ---------------------------------------------------------

// C[R rows, NV·W cols] = (accumulate ? C : bias ? bias : 0) + A[R, K] · B[K, ·].
// The accumulators stay in registers: R·NV vectors (AVX-512: 6·4 = 24 of
// 32 registers; AVX2/SSE: 4·3 = 12 of 16).
template <int W, int R, int NV>
TCL_INLINE void gemm_tile(int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, const float* bias,
                          bool accumulate, float* C, int64_t ldc) {
  using F = typename Lanes<W>::F;
  F acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      acc[r][v] = accumulate ? load<W>(C + r * ldc + v * W) : (bias != nullptr ? load<W>(bias + v * W) : F{});
    }
  }
  for (int64_t k = 0; k < K; ++k) {
    F b[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) b[v] = load<W>(B + k * ldb + v * W);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float a = A[r * lda + k];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] += a * b[v];
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) store<W>(C + r * ldc + v * W, acc[r][v]);
  }
}

template <int W, int R, int NV>
TCL_INLINE void gemm_panel(int64_t M, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                           const float* bias, bool accumulate, float* C, int64_t ldc) {
  int64_t m = 0;
  for (; m + R <= M; m += R) {
    gemm_tile<W, R, NV>(K, A + m * lda, lda, B, ldb, bias, accumulate, C + m * ldc, ldc);
  }
  for (; m < M; ++m) {
    gemm_tile<W, 1, NV>(K, A + m * lda, lda, B, ldb, bias, accumulate, C + m * ldc, ldc);
  }
}

// C[M, N] = (accumulate ? C : bias) + A[M, K] · B[K, N]; B row-major with
// ldb = N; N a multiple of W. Each output is one chain over k in order, so a
// row's result does not depend on M or on its position in the tiling.
template <int W>
TCL_INLINE void gemm_impl(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                          const float* bias, bool accumulate, float* C, int64_t ldc) {
  constexpr int R = W == 16 ? 6 : 4;
  constexpr int NV = W == 16 ? 4 : 3;
  for (int64_t n = 0; n < N;) {
    const int64_t left = (N - n) / W;
    const float* Bn = B + n;
    const float* bn = bias != nullptr ? bias + n : nullptr;
    if (left >= NV) {
      gemm_panel<W, R, NV>(M, K, A, lda, Bn, N, bn, accumulate, C + n, ldc);
      n += NV * W;
    } else if (left == 3) {
      gemm_panel<W, R, 3>(M, K, A, lda, Bn, N, bn, accumulate, C + n, ldc);
      n += 3 * W;
    } else if (left == 2) {
      gemm_panel<W, R, 2>(M, K, A, lda, Bn, N, bn, accumulate, C + n, ldc);
      n += 2 * W;
    } else {
      gemm_panel<W, R, 1>(M, K, A, lda, Bn, N, bn, accumulate, C + n, ldc);
      n += W;
    }
  }
}

// --- element-wise and per-program kernels ----------------------------------

// 1 / sqrt(sum(x²) / d + eps) over a row's dp floats (d of them the
// model's): RMSNorm's scale, for the per-token norm and the pooled one.
template <int W>
TCL_INLINE float rms_inverse(const float* x, int64_t d, int64_t dp) {
  using F = typename Lanes<W>::F;
  F ss{};
  for (int64_t c = 0; c < dp; c += W) {
    const F v = load<W>(x + c);
    ss += v * v;
  }
  return 1.0f / std::sqrt(hsum<W>(ss) / static_cast<float>(d) + kRmsEps);
}

// out[t] = x[t] / sqrt(mean(x[t, :d]²) + eps) ⊙ w, rows of dp floats
// (columns past d are 0 in x and w).
template <int W>
TCL_INLINE void rmsnorm_impl(int64_t T, int64_t d, int64_t dp, const float* x, const float* w, float* out) {
  for (int64_t t = 0; t < T; ++t) {
    const float* xt = x + t * dp;
    const float inv = rms_inverse<W>(xt, d, dp);
    for (int64_t c = 0; c < dp; c += W) {
      store<W>(out + t * dp + c, load<W>(xt + c) * inv * load<W>(w + c));
    }
  }
}

// u[t] = SiLU(b + Σ_j w[j] ⊙ x[t - (dc-1) + j]) per program (inputs before
// the program's first token are 0); x rows have stride ldx.
template <int W>
TCL_INLINE void conv_silu_impl(int64_t P, const int64_t* offsets, int64_t dc, int64_t dip, const float* x, int64_t ldx,
                               const float* w, const float* b, float* u) {
  using F = typename Lanes<W>::F;
  for (int64_t p = 0; p < P; ++p) {
    const int64_t first = offsets[p], n = offsets[p + 1] - first;
    for (int64_t t = 0; t < n; ++t) {
      const int64_t j0 = std::max<int64_t>(0, dc - 1 - t);  // taps before the program are 0
      for (int64_t c = 0; c < dip; c += W) {
        F acc = load<W>(b + c);
        for (int64_t j = j0; j < dc; ++j) {
          acc += load<W>(w + j * dip + c) * load<W>(x + (first + t - (dc - 1) + j) * ldx + c);
        }
        store<W>(u + (first + t) * dip + c, silu<W>(acc));
      }
    }
  }
}

template <int W>
TCL_INLINE void silu_impl(int64_t n, float* x) {
  for (int64_t i = 0; i < n; i += W) store<W>(x + i, silu<W>(load<W>(x + i)));
}

// Δ, the selective scan, D skip and gate, per program, state [ds, dip] from 0:
//   Δ_t = softplus(dt_b + dt_t · dbc[t, 0:r])                (dt_proj, fused here)
//   h_t = exp(Δ_t ⊙ A) ⊙ h_{t-1} + (Δ_t ⊙ u_t) ⊗ B_t
//   u_t ← (h_t · C_t + D ⊙ u_t) ⊙ SiLU(z_t)                 (in place)
// B_t, C_t are columns [r, r+ds) and [r+ds, r+2ds) of dbc's row t; z_t is
// columns [dip, 2·dip) of xz's row t. a2 = A · log2(e), so exp(Δ·A) = 2^(Δ·a2).
template <int W>
TCL_INLINE void scan_gate_impl(int64_t P, const int64_t* offsets, int64_t dip, int64_t ds, int64_t r, const float* dt_t,
                               const float* dt_b, const float* dbc, int64_t ldbc, const float* xz, int64_t ldxz,
                               const float* a2, const float* skip, float* state, float* u) {
  using F = typename Lanes<W>::F;
  for (int64_t p = 0; p < P; ++p) {
    const int64_t first = offsets[p], n = offsets[p + 1] - first;
    if (n == 0) continue;
    std::memset(state, 0, sizeof(float) * static_cast<size_t>(ds * dip));
    for (int64_t t = first; t < first + n; ++t) {
      const float* dt_in = dbc + t * ldbc;
      const float* Bt = dt_in + r;
      const float* Ct = Bt + ds;
      float* ut = u + t * dip;
      for (int64_t c = 0; c < dip; c += W) {
        F dt = load<W>(dt_b + c);
        for (int64_t k = 0; k < r; ++k) dt += dt_in[k] * load<W>(dt_t + k * dip + c);
        dt = softplus<W>(dt);
        const F uu = load<W>(ut + c);
        const F dtu = dt * uu;
        F y{};
        for (int64_t s = 0; s < ds; ++s) {
          float* hs = state + s * dip + c;
          const F decay = exp2_nonpositive<W>(dt * load<W>(a2 + s * dip + c));
          const F hv = decay * load<W>(hs) + dtu * Bt[s];
          store<W>(hs, hv);
          y += hv * Ct[s];
        }
        y += load<W>(skip + c) * uu;
        store<W>(ut + c, y * silu<W>(load<W>(xz + t * ldxz + dip + c)));
      }
    }
  }
}

// pooled[p] = mean over the program's rows of RMSNorm(h) ⊙ w (0 when empty).
template <int W>
TCL_INLINE void pool_impl(int64_t P, const int64_t* offsets, int64_t d, int64_t dp, const float* h, const float* w,
                          float* pooled) {
  for (int64_t p = 0; p < P; ++p) {
    const int64_t first = offsets[p], n = offsets[p + 1] - first;
    float* out = pooled + p * dp;
    std::memset(out, 0, sizeof(float) * static_cast<size_t>(dp));
    for (int64_t t = first; t < first + n; ++t) {
      const float* xt = h + t * dp;
      const float inv = rms_inverse<W>(xt, d, dp);
      for (int64_t c = 0; c < dp; c += W) {
        store<W>(out + c, load<W>(out + c) + load<W>(xt + c) * inv * load<W>(w + c));
      }
    }
    const float count = static_cast<float>(std::max<int64_t>(n, 1));
    for (int64_t c = 0; c < dp; c += W) store<W>(out + c, load<W>(out + c) / count);
  }
}

// emb[p] = pooled[p] ⊙ (1 + γ) + β, (γ, β) = film row p (film_ld = 0: one row for all).
template <int W>
TCL_INLINE void condition_impl(int64_t P, int64_t dp, const float* pooled, const float* film, int64_t film_ld,
                               float* emb) {
  for (int64_t p = 0; p < P; ++p) {
    const float* gamma = film + p * film_ld;
    const float* beta = gamma + dp;
    for (int64_t c = 0; c < dp; c += W) {
      store<W>(emb + p * dp + c, load<W>(pooled + p * dp + c) * (1.0f + load<W>(gamma + c)) + load<W>(beta + c));
    }
  }
}

// scores[p] = hidden[p] · w + b.
template <int W>
TCL_INLINE void head_dot_impl(int64_t P, int64_t hhp, const float* hidden, const float* w, float b, float* scores) {
  using F = typename Lanes<W>::F;
  for (int64_t p = 0; p < P; ++p) {
    F acc{};
    for (int64_t c = 0; c < hhp; c += W) acc += load<W>(hidden + p * hhp + c) * load<W>(w + c);
    scores[p] = hsum<W>(acc) + b;
  }
}

// --- one kernel set per instruction set -------------------------------------

// TARGET is an attribute (or nothing), which parentheses would break.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define TCL_KERNEL_SET(NAME, W, TARGET)                                                                                \
  struct NAME {                                                                                                        \
    TARGET static void gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,              \
                            const float* bias, bool accumulate, float* C, int64_t ldc) {                               \
      gemm_impl<W>(M, N, K, A, lda, B, bias, accumulate, C, ldc);                                                      \
    }                                                                                                                  \
    TARGET static void rmsnorm(int64_t T, int64_t d, int64_t dp, const float* x, const float* w, float* out) {         \
      rmsnorm_impl<W>(T, d, dp, x, w, out);                                                                            \
    }                                                                                                                  \
    TARGET static void conv_silu(int64_t P, const int64_t* offsets, int64_t dc, int64_t dip, const float* x,           \
                                 int64_t ldx, const float* w, const float* b, float* u) {                              \
      conv_silu_impl<W>(P, offsets, dc, dip, x, ldx, w, b, u);                                                         \
    }                                                                                                                  \
    TARGET static void silu(int64_t n, float* x) { silu_impl<W>(n, x); }                                               \
    TARGET static void scan_gate(int64_t P, const int64_t* offsets, int64_t dip, int64_t ds, int64_t r,                \
                                 const float* dt_t, const float* dt_b, const float* dbc, int64_t ldbc,                 \
                                 const float* xz, int64_t ldxz, const float* a2, const float* skip, float* state,      \
                                 float* u) {                                                                           \
      scan_gate_impl<W>(P, offsets, dip, ds, r, dt_t, dt_b, dbc, ldbc, xz, ldxz, a2, skip, state, u);                  \
    }                                                                                                                  \
    TARGET static void pool(int64_t P, const int64_t* offsets, int64_t d, int64_t dp, const float* h, const float* w,  \
                            float* pooled) {                                                                           \
      pool_impl<W>(P, offsets, d, dp, h, w, pooled);                                                                   \
    }                                                                                                                  \
    TARGET static void condition(int64_t P, int64_t dp, const float* pooled, const float* film, int64_t film_ld,       \
                                 float* emb) {                                                                         \
      condition_impl<W>(P, dp, pooled, film, film_ld, emb);                                                            \
    }                                                                                                                  \
    TARGET static void head_dot(int64_t P, int64_t hhp, const float* hidden, const float* w, float b, float* scores) { \
      head_dot_impl<W>(P, hhp, hidden, w, b, scores);                                                                  \
    }                                                                                                                  \
  }
// NOLINTEND(bugprone-macro-parentheses)

#if defined(__x86_64__) && defined(__GNUC__)
TCL_KERNEL_SET(KernelsAvx512, 16, __attribute__((target("avx512f,avx2,fma"))));
TCL_KERNEL_SET(KernelsAvx2, 8, __attribute__((target("avx2,fma"))));
#endif
TCL_KERNEL_SET(KernelsBaseline, 4, );

// --- the chunk pipeline -----------------------------------------------------

template <typename K>
void run_chunk_with(const Net& net, const CallArgs& call, int64_t p_begin, int64_t p_end, Scratch& s) {
  const Dims& d = net.dims;
  const int64_t P = p_end - p_begin;
  const int64_t ldxz = 2 * d.dip;

  // Pack the real tokens of the chunk's programs, back to back.
  int64_t T = 0;
  for (int64_t i = 0; i < P; ++i) {
    const int64_t len = call.lengths[p_begin + i];
    s.offsets[static_cast<size_t>(i)] = T;
    std::memcpy(s.x + T * d.tok, call.tokens + (p_begin + i) * call.seq_len * d.tok,
                sizeof(float) * static_cast<size_t>(len * d.tok));
    T += len;
  }
  s.offsets[static_cast<size_t>(P)] = T;
  const int64_t* offsets = s.offsets.data();

  K::gemm(T, d.dp, d.tok, s.x, d.tok, net.tok_t, net.tok_b, false, s.h, d.dp);
  for (const LayerWeights& l : net.layers) {
    K::rmsnorm(T, d.d, d.dp, s.h, l.norm, s.hn);
    K::gemm(T, 2 * d.dip, d.d, s.hn, d.dp, l.in_t, nullptr, false, s.xz, ldxz);
    K::conv_silu(P, offsets, d.dc, d.dip, s.xz, ldxz, l.conv_t, l.conv_b, s.u);
    K::gemm(T, d.dbcp, d.di, s.u, d.dip, l.x_t, nullptr, false, s.dbc, d.dbcp);
    K::scan_gate(P, offsets, d.dip, d.ds, d.r, l.dt_t, l.dt_b, s.dbc, d.dbcp, s.xz, ldxz, l.a2_t, l.skip, s.state, s.u);
    K::gemm(T, d.dp, d.di, s.u, d.dip, l.out_t, nullptr, /*accumulate=*/true, s.h, d.dp);
  }
  K::pool(P, offsets, d.d, d.dp, s.h, net.norm_f, s.pooled);

  const float* film = call.shared_film;
  int64_t film_ld = 0;
  if (film == nullptr) {
    K::gemm(P, d.fhp, d.desc, call.descriptors + p_begin * d.desc, d.desc, net.film_in_t, net.film_in_b, false,
            s.film_hidden, d.fhp);
    K::silu(P * d.fhp, s.film_hidden);
    K::gemm(P, 2 * d.dp, d.fh, s.film_hidden, d.fhp, net.film_out_t, net.film_out_b, false, s.film, 2 * d.dp);
    film = s.film;
    film_ld = 2 * d.dp;
  }
  K::condition(P, d.dp, s.pooled, film, film_ld, s.emb);
  if (call.embeddings != nullptr) {
    for (int64_t i = 0; i < P; ++i) {
      std::memcpy(call.embeddings + (p_begin + i) * d.d, s.emb + i * d.dp, sizeof(float) * static_cast<size_t>(d.d));
    }
    return;
  }
  K::gemm(P, d.hhp, d.d, s.emb, d.dp, net.head_in_t, net.head_in_b, false, s.head_hidden, d.hhp);
  K::silu(P * d.hhp, s.head_hidden);
  K::head_dot(P, d.hhp, s.head_hidden, net.head_out_w, net.head_out_b, call.scores + p_begin);
}

template <typename K>
void shared_film_with(const Net& net, const float* descriptor, float* hidden, float* film) {
  const Dims& d = net.dims;
  K::gemm(1, d.fhp, d.desc, descriptor, d.desc, net.film_in_t, net.film_in_b, false, hidden, d.fhp);
  K::silu(d.fhp, hidden);
  K::gemm(1, 2 * d.dp, d.fh, hidden, d.fhp, net.film_out_t, net.film_out_b, false, film, 2 * d.dp);
}

}  // namespace

void run_chunk(SimdLevel level, const Net& net, const CallArgs& call, int64_t p_begin, int64_t p_end,
               Scratch& scratch) {
  switch (level) {
#if defined(__x86_64__) && defined(__GNUC__)
    case SimdLevel::kAvx512: return run_chunk_with<KernelsAvx512>(net, call, p_begin, p_end, scratch);
    case SimdLevel::kAvx2: return run_chunk_with<KernelsAvx2>(net, call, p_begin, p_end, scratch);
#endif
    default: return run_chunk_with<KernelsBaseline>(net, call, p_begin, p_end, scratch);
  }
}

void shared_film(SimdLevel level, const Net& net, const float* descriptor, float* hidden, float* film) {
  switch (level) {
#if defined(__x86_64__) && defined(__GNUC__)
    case SimdLevel::kAvx512: return shared_film_with<KernelsAvx512>(net, descriptor, hidden, film);
    case SimdLevel::kAvx2: return shared_film_with<KernelsAvx2>(net, descriptor, hidden, film);
#endif
    default: return shared_film_with<KernelsBaseline>(net, descriptor, hidden, film);
  }
}

}  // namespace tcl::trainer::fast
