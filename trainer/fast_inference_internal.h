// trainer/fast_inference_internal.h — what fast_inference.cc (weights from
// torch, threads, checks) and fast_inference_kernels.cc (torch-free kernels,
// built with FMA contraction) share: the packed weight layout, the per-thread
// scratch and the chunk entry point. Not for use outside these two files.
//
// Layout conventions: every matrix is stored [in, out] row-major ("_t" =
// transposed from torch's [out, in]) with its out width padded to a multiple
// of kPadFloats; the padding columns (and rows past `in`) are zero, so padded
// activation columns come out exactly 0 and never disturb real ones.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "trainer/fast_inference.h"

namespace tcl::trainer::fast {

// The widest vector (AVX-512: 16 floats); every padded width is a multiple.
inline constexpr int64_t kPadFloats = 16;
inline int64_t pad_floats(int64_t n) { return (n + kPadFloats - 1) / kPadFloats * kPadFloats; }

// RMSNorm's epsilon (trainer/layers.h default, used by the student).
inline constexpr float kRmsEps = 1e-5f;

// 64-byte aligned, zero-filled floats.
class AlignedFloats {
 public:
  AlignedFloats() = default;
  // Throws std::bad_alloc.
  explicit AlignedFloats(int64_t count);
  float* data() const { return data_.get(); }
  int64_t size() const { return size_; }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  int64_t size_ = 0;
};

// Sizes, real and padded ("p").
struct Dims {
  int64_t tok = 0;          // token_dim
  int64_t desc = 0;         // descriptor_dim
  int64_t d = 0, dp = 0;    // d_model
  int64_t di = 0, dip = 0;  // d_inner = expand · d_model
  int64_t ds = 0;           // d_state
  int64_t r = 0;            // dt_rank
  int64_t dc = 0;           // d_conv
  int64_t dbcp = 0;         // padded dt_rank + 2 · d_state (x_proj's outputs)
  int64_t fh = 0, fhp = 0;  // film_hidden
  int64_t hh = 0, hhp = 0;  // head_hidden
  int64_t n_layers = 0;
};

struct LayerWeights {
  const float* norm = nullptr;    // [dp]
  const float* in_t = nullptr;    // [d, 2·dip]: x' in cols [0, di), z in [dip, dip + di)
  const float* conv_t = nullptr;  // [dc, dip]: tap j multiplies input t - (dc-1) + j
  const float* conv_b = nullptr;  // [dip]
  const float* x_t = nullptr;     // [di, dbcp]: dt [0, r), B [r, r+ds), C [r+ds, r+2ds)
  const float* dt_t = nullptr;    // [r, dip]
  const float* dt_b = nullptr;    // [dip]
  const float* a2_t = nullptr;    // [ds, dip]: A · log2(e) = -exp(A_log) · log2(e)
  const float* skip = nullptr;    // [dip]: D
  const float* out_t = nullptr;   // [di, dp]
};

struct Net {
  Dims dims;
  AlignedFloats arena;           // every pointer below points into it
  const float* tok_t = nullptr;  // [tok, dp]
  const float* tok_b = nullptr;  // [dp]
  std::vector<LayerWeights> layers;
  const float* norm_f = nullptr;      // [dp]
  const float* film_in_t = nullptr;   // [desc, fhp]
  const float* film_in_b = nullptr;   // [fhp]
  const float* film_out_t = nullptr;  // [fh, 2·dp]: γ in cols [0, d), β in [dp, dp + d)
  const float* film_out_b = nullptr;  // [2·dp]
  const float* head_in_t = nullptr;   // [d, hhp]
  const float* head_in_b = nullptr;   // [hhp]
  const float* head_out_w = nullptr;  // [hhp]
  float head_out_b = 0;
};

// One thread's activations for a chunk of at most `rows` real tokens and
// `programs` programs. Allocated once, reused for every chunk and call.
struct Scratch {
  Scratch(const Dims& d, int64_t rows, int64_t programs);  // throws std::bad_alloc
  int64_t rows = 0, programs = 0;
  AlignedFloats mem;
  float* x = nullptr;            // [rows, tok]    packed real tokens
  float* h = nullptr;            // [rows, dp]     residual stream
  float* hn = nullptr;           // [rows, dp]     RMSNorm(h)
  float* xz = nullptr;           // [rows, 2·dip]  in_proj output
  float* u = nullptr;            // [rows, dip]    SiLU(conv(x')), then the gated scan output
  float* dbc = nullptr;          // [rows, dbcp]   x_proj output
  float* state = nullptr;        // [ds, dip]      scan state of the current program
  float* pooled = nullptr;       // [programs, dp]
  float* film_hidden = nullptr;  // [programs, fhp]
  float* film = nullptr;         // [programs, 2·dp]  (γ, β)
  float* emb = nullptr;          // [programs, dp]
  float* head_hidden = nullptr;  // [programs, hhp]
  std::vector<int64_t> offsets;  // [programs + 1]: first packed row of each program
};

// One call's inputs and outputs, shared read-only by its threads (outputs
// are written at disjoint rows).
struct CallArgs {
  const float* tokens = nullptr;  // [count, seq_len, tok]
  int64_t seq_len = 0;
  const int32_t* lengths = nullptr;    // [count], each in [0, seq_len]
  const float* descriptors = nullptr;  // [count, desc]; null when shared_film is set
  const float* shared_film = nullptr;  // [2·dp] (γ, β) for every program, or null
  float* scores = nullptr;             // [count], or null
  float* embeddings = nullptr;         // [count, d], or null (exactly one output is set)
};

// Programs [p_begin, p_end) of `call`: their real tokens must fit
// scratch.rows and their number scratch.programs. `level` is resolved.
void run_chunk(SimdLevel level, const Net& net, const CallArgs& call, int64_t p_begin, int64_t p_end, Scratch& scratch);

// (γ, β) of one descriptor [desc] into film [2·dp]; hidden is [fhp] scratch.
void shared_film(SimdLevel level, const Net& net, const float* descriptor, float* hidden, float* film);

}  // namespace tcl::trainer::fast
