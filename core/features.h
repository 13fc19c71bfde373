// core/features.h — what the models see (DESIGN §3):
//   (a) step tokens: one token of kTokenDim floats per step;
//   (a') the workload token: one more token, from the workload key (a lever
//        under study; benchmarks only);
//   (b) the TLP encoding (step-kind one-hot + raw arguments), for baselines;
//   (c) the hardware descriptor of a platform (kHardwareDim floats).
// All encoders write into caller-provided contiguous float buffers, assert the
// shapes once and loop plainly; all but encode_workload (which parses the
// key's JSON) allocate nothing.
//
// Token layout (slot: meaning; "log" = log2(1 + x), x < 0 taken as 0;
// "id" = x / kIdScale):
//   [0, 15)  step-kind one-hot, StepKind order (AN FU PR RE SP FSP FFSP SA CA
//            CI CR CHR CHW RF unknown)
//   15       stage_id (id)
//   16       iter_id (id): AN PR SP FSP FFSP SA RF; FU: first fused id
//   17       target stage (id): CA target_stage_id; CHR first reader stage
//   18       CA target_iter_id (id)
//   19       SP extent (log)
//   20..23   split lengths (log), first 4: SP lengths; FSP/FFSP the lengths
//            they follow, resolved from the referenced SP steps as TVM does
//            (ExtractSplitLengths / ExtractSplitLength); unresolvable -> 0
//   24       number of split lengths / 4 (SP lengths, FSP n_split, FFSP 1)
//   25       SP inner_to_outer, FFSP factor_or_nparts (0/1)
//   26       FSP src_step_id; FFSP first src_step_id (id)
//   27       FFSP level (id)
//   28..39   annotation one-hot (Annotation values 0..11), AN only
//   40       PR auto_unroll_max_step value (log)
//   41       PR other pragma (1)
//   42..45   cache scope one-hot: shared, local, global, other (CHR, CHW)
//   46       list length (log): FU fused ids, RE after ids, CHR readers,
//            FFSP src steps
//   47       SA factor (log)
//   48       SA offset (log)
//   49       RF factor_iter_id (id)
// Sequences longer than max_len keep their first max_len steps; shorter ones
// are zero-padded, and the mask is 1 for real tokens, 0 for padding.
//
// Thread-safety: pure functions (they read a constant table built on first use).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "core/record.h"

namespace tcl::core {

// Bumped whenever any layout below changes; stored beside trained weights.
inline constexpr int kFeatureVersion = 1;

inline constexpr int kTokenDim = 50;
// GPU records reach ~70 steps (max 70 in the shared data); 72 keeps them whole.
inline constexpr int kDefaultMaxSteps = 72;
inline constexpr float kIdScale = 16.0f;

// Named slots of the token layout (see the table above).
namespace token_slot {
inline constexpr int kKind = 0;
inline constexpr int kStage = 15;
inline constexpr int kIter = 16;
inline constexpr int kTargetStage = 17;
inline constexpr int kTargetIter = 18;
inline constexpr int kExtent = 19;
inline constexpr int kLengths = 20;
inline constexpr int kMaxLengths = 4;
inline constexpr int kNumLengths = 24;
inline constexpr int kInnerToOuter = 25;
inline constexpr int kSrcStep = 26;
inline constexpr int kLevel = 27;
inline constexpr int kAnnotation = 28;
inline constexpr int kPragmaUnroll = 40;
inline constexpr int kPragmaOther = 41;
inline constexpr int kScope = 42;  // shared, local, global, other
inline constexpr int kListLength = 46;
inline constexpr int kAlignFactor = 47;
inline constexpr int kAlignOffset = 48;
inline constexpr int kRfactorIter = 49;
}  // namespace token_slot
static_assert(token_slot::kRfactorIter + 1 == kTokenDim);
static_assert(token_slot::kAnnotation + kNumAnnotations == token_slot::kPragmaUnroll);

// Encodes one step sequence into out[max_len * kTokenDim] (row-major [L, D]).
// Returns the number of real tokens, min(steps.size(), max_len). max_len > 0.
int encode_tokens(std::span<const Step> steps, int max_len, float* out);

// Batch form: tokens [n, max_len, kTokenDim]; mask [n, max_len] (1 or 0) and
// lengths [n] may be null. Buffers are owned by the caller.
void encode_tokens_batch(std::span<const Record> records, int max_len, float* tokens, float* mask,
                         std::int32_t* lengths);

// --- (a') the workload token (issue 19 item 5's "what the tokens carry about
// the workload" lever; trainer/dataset.h TokenEncoding::kStepsWorkload puts it
// before the step tokens). One kTokenDim row, told apart from every step
// token by its all-zero step-kind one-hot (slots 0..14). From the workload
// key's arguments after its first element (the function name or DAG hash,
// not encoded): a "tensor" is an argument that is a list of numbers (its
// shape), a "scalar" a number; strings and booleans are skipped.
// "log" = log2(1 + max(x, 0)); slots:
//   15       tensors / 8
//   16       scalars / 8
//   17..22   log elements of tensors 0..5 / 32
//   23..28   ranks of tensors 0..5 / 8
//   29..34   the last tensor's dims 0..5 (log) / 16 — the output, in relay keys
//   35..40   the first tensor's dims 0..5 (log) / 16
//   41..48   scalars 0..7 (log) / 16 — named keys ("conv2d_layer", N, C, ...)
//   49       log(Σ tensor elements, else Π scalars) / 32
// A key that is not a JSON array leaves every slot 0.
inline constexpr int kWorkloadTensors = 6;
inline constexpr int kWorkloadDims = 6;
inline constexpr int kWorkloadScalars = 8;
namespace workload_slot {
inline constexpr int kTensors = 15;
inline constexpr int kScalars = 16;
inline constexpr int kElements = 17;
inline constexpr int kRanks = kElements + kWorkloadTensors;
inline constexpr int kLastDims = kRanks + kWorkloadTensors;
inline constexpr int kFirstDims = kLastDims + kWorkloadDims;
inline constexpr int kScalarValues = kFirstDims + kWorkloadDims;
inline constexpr int kSize = kScalarValues + kWorkloadScalars;
}  // namespace workload_slot
static_assert(workload_slot::kTensors == token_slot::kStage && workload_slot::kSize + 1 == kTokenDim);
void encode_workload(std::string_view workload_key, float* out);

// --- (b) TLP (Zhai et al., ASPLOS'23) encoding -----------------------------
// Per step: an 11-wide one-hot over the platform's step vocabulary, then the
// step's raw arguments in record order (lists flattened; PR
// auto_unroll_max_step$N -> 1-based index of N in {0,16,64,512,1024}, else 0;
// CHW scope local/shared/global -> 1/2/3; CHR scope shared -> 1, else 0),
// zero-padded, cut to emb_size; the sequence is cut/padded to seq_len.
// Vocabularies: CPU {SP AN FSP RE FU CI CA PR CR RF CHW}, GPU {SP AN FSP RE FU
// CI CA PR CHR FFSP CHW} (the 11 kinds of TenSet's CPU / GPU logs). A kind out
// of the vocabulary gets an all-zero one-hot but keeps its arguments.
enum class TlpVocabulary { kCpu, kGpu };
inline constexpr int kTlpKindSlots = 11;
struct TlpConfig {
  int seq_len;
  int emb_size;  // > kTlpKindSlots
  TlpVocabulary vocabulary;
};
inline constexpr TlpConfig kTlpCpu{25, 22, TlpVocabulary::kCpu};
inline constexpr TlpConfig kTlpGpu{40, 20, TlpVocabulary::kGpu};

// Writes out[seq_len * emb_size]; returns the number of real steps encoded.
int encode_tlp(std::span<const Step> steps, const TlpConfig& config, float* out);

// --- (c) hardware descriptor ----------------------------------------------
// Layout ("log" = log2(1 + max(x, 0)) / scale, so typical values are in [0, 1]):
//   0..7   hardware params (num_cores/8, vector_unit_bytes/8, cache_line_bytes/8,
//          max_shared_memory_per_block/20, max_local_memory_per_block/32,
//          max_threads_per_block/12, max_vthread_extent/8, warp_size/8), log
//   8      1 if hardware params were given
//   9..11  keys: cpu, gpu, arm_cpu
//   12..18 target kind: llvm, cuda, rocm, opencl, vulkan, metal, other
//   19..22 ISA family (from -mtriple/-mcpu/-device/kind): x86, arm, riscv, nvptx
//   23..28 ISA features (from -mcpu/-mattr/triple): avx2, avx512, neon, sve,
//          int8 dot product (vnni/dotprod), fma
//   29     CUDA compute capability (sm_75 -> 0.75)
//   30     cores: hardware num_cores, else -num-cores (log, /8)
//   31     warp size: hardware, else -thread_warp_size (log, /8)
//   32     shared memory per block: hardware, else option (log, /20)
//   33     threads per block: -max_num_threads, else hardware (log, /12)
//   34     vector width bytes: hardware, else implied by the ISA (log, /8)
//   35     1 if -mcpu or -arch names the exact chip
inline constexpr int kHardwareDim = 36;
void encode_hardware(const std::optional<HardwareParams>& hw, std::string_view target, float* out);

// Whether two descriptors of encode_hardware's layout (more floats may
// follow) name the same target kind (slots 12..18: llvm, cuda, ...): the
// coarsest nearness of two platforms, a CPU to a CPU, a GPU to a GPU.
// false when either is shorter than the kind slots.
bool same_target_kind(std::span<const float> a, std::span<const float> b);

}  // namespace tcl::core
