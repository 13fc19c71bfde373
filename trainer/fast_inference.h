// trainer/fast_inference.h — the student's inference fast path (DESIGN §4:
// "no autograd, batched, preallocated, parallel over the batch").
//
// A StudentInference is a snapshot of a trained Mamba student (ModelKind::
// kMamba): construction copies the weights out of the torch module into one
// contiguous arena of plain float arrays, transposed to [in, out] and padded
// to 16-float widths; after that no torch code runs. A call scores a batch
// (trainer/cost_model.h's FeatureBatch: core's token and descriptor buffers)
// the way ScoreModel::forward / embed do in eval mode, but:
//   - only the first lengths[i] tokens of each program are computed (the
//     causal conv and scan make padding irrelevant; the mean pools the same
//     rows), so a CPU record of 22 steps costs 22 tokens, not seq_len;
//   - programs are packed into chunks of about `chunk_tokens` real tokens;
//     each chunk runs the projections as one matrix product over all its
//     tokens, the causal depthwise conv + SiLU, softplus, selective scan, D
//     skip and SiLU(z) gate as fused per-program loops, then pooling, FiLM
//     and the head. Activations stay in a per-thread scratch (L2-sized),
//     allocated once and reused across calls: nothing allocates per chunk;
//   - chunks are handed out dynamically to `threads` threads (the caller's
//     included) per call.
// Kernels are plain loops over contiguous buffers on GCC vector types, built
// for AVX-512 (16 lanes), AVX2+FMA (8) and baseline x86-64 (4); the widest
// the CPU supports is chosen at construction (InferenceOptions::simd forces
// one, for tests and benchmarks).
//
// Accuracy: matches the torch forward (float32) to ~2e-6 of the outputs'
// scale on real-shaped inputs (exp and log are polynomial approximations
// with relative error < 2e-7; FMAs and summation orders differ from torch;
// denormals are flushed to zero while a call runs, on its threads only).
// Determinism: each program's result depends only on its own inputs and the
// weights, not on the batch it came in, the chunking or the thread count
// (bit-identical), for a given SimdLevel.
//
// Weights are a snapshot: later changes to the torch model (training) are not
// seen; build a new StudentInference after each training step you want to serve.
//
// Thread-safety: predict() and embed() are const and may run concurrently
// (each call uses its own threads and takes scratch from an internally
// locked pool). Construction and destruction need exclusive access.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "core/status.h"
#include "trainer/cost_model.h"
#include "trainer/model_config.h"

namespace tcl::trainer {

class ScoreModel;

// Which kernels run. kAuto: the widest this CPU supports.
enum class SimdLevel { kAuto, kBaseline, kAvx2, kAvx512 };
std::string_view simd_level_name(SimdLevel level);  // "auto", "baseline", "avx2", "avx512"
// Whether this CPU runs `level` (kAuto and kBaseline: always).
bool simd_level_supported(SimdLevel level);

struct InferenceOptions {
  // Threads per call, the caller's included; 0 = std::thread::hardware_concurrency().
  int32_t threads = 1;
  // Real tokens per work item (≥ 1; a longer program still forms one item).
  // The default keeps a chunk's activations (~2.5 KB per token) in L2.
  int32_t chunk_tokens = 384;
  SimdLevel simd = SimdLevel::kAuto;
};

class StudentInference {
 public:
  // Copies the weights of `model` (kind kMamba, any valid config). The model
  // is only read during the call. kInvalidArgument for another kind, for a
  // SimdLevel this CPU lacks or for bad options; kInternal when a parameter
  // is missing or misshapen.
  static Result<std::unique_ptr<StudentInference>> create(const ScoreModel& model,
                                                          const InferenceOptions& options = {});
  // The same, from the torch-free facade (for callers outside trainer/).
  static Result<std::unique_ptr<StudentInference>> create(const CostModel& model, const InferenceOptions& options = {});
  ~StudentInference();
  StudentInference(const StudentInference&) = delete;
  StudentInference& operator=(const StudentInference&) = delete;

  const ModelConfig& config() const;
  SimdLevel simd_level() const;  // resolved: never kAuto
  int32_t threads() const;       // resolved: ≥ 1
  // Bytes of the packed weight arena (padded; ≥ 4 · num_parameters).
  int64_t weight_bytes() const;

  // As CostModel::predict: scores[i] for program i, scores.size() == count.
  // kInvalidArgument naming the mismatch when sizes disagree with the config.
  Status predict(const FeatureBatch& batch, std::span<float> scores) const;
  // As CostModel::embed: the FiLM-conditioned pooled state, row-major
  // [count, d_model].
  Status embed(const FeatureBatch& batch, std::span<float> embeddings) const;

  // MC dropout for uncertainty (the sampler's U): `samples` passes of the
  // scoring head over embed()'s output with fresh dropout masks at the
  // model's dropout rate (the student's dropout lives in its head, so this
  // is the distribution CostModel::predict_mc samples from, without running
  // the encoder again). scores[s · count + i], sample-major. Deterministic
  // for a seed, whatever the thread count. kInvalidArgument on size
  // mismatches or samples < 1. Single-threaded plain loops: the head is a
  // few percent of a forward pass.
  Status head_mc(std::span<const float> embeddings, int64_t count, int32_t samples, uint64_t seed,
                 std::span<float> scores) const;

 private:
  struct Impl;
  explicit StudentInference(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;  // constant after construction, except Impl's locked pool
};

}  // namespace tcl::trainer
