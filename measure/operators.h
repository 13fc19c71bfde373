// measure/operators.h — the operators tcl-measure can generate and run, the
// real shapes of ResNet-50, MobileNet-V2 and BERT-base, and workload keys.
//
// A Workload is an operator kind plus its integer arguments; its key is the
// JSON text `["tcl.<kind>", arg, ...]`, e.g. `["tcl.matmul", 128, 768, 3072]`.
// Keys are part of stored records: never change the spelling or the argument
// order of a kind; add kinds instead.
//
//   kind                       args                                   loops
//   tcl.matmul                 M, N, K                                C[i,j] += A[i,k] B[k,j]
//   tcl.batch_matmul           B, M, N, K                             C[b,i,j] += A[b,i,k] B[b,k,j]
//   tcl.conv2d_nhwc            N, H, W, CI, CO, KH, KW, stride, pad   O[n,h,w,co] += P[n,h*s+rh,w*s+rw,ci]
//   W[rh,rw,ci,co] tcl.depthwise_conv2d_nhwc  N, H, W, C, KH, KW, stride, pad        O[n,h,w,c] += P[n,h*s+rh,w*s+rw,c]
//   W[rh,rw,c] tcl.softmax                ROWS, COLS                             O[r,c] = exp(X[r,c] - max_r) / sum_r
//
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tcl::measure {

enum class OpKind { kMatmul, kBatchMatmul, kConv2d, kDepthwiseConv2d, kSoftmax };
inline constexpr int kNumOpKinds = 5;

// "matmul", "batch_matmul", "conv2d_nhwc", "depthwise_conv2d_nhwc", "softmax".
std::string_view op_kind_name(OpKind kind);

struct Workload {
  OpKind kind = OpKind::kMatmul;
  std::vector<std::int64_t> args;  // as in the table above

  bool operator==(const Workload&) const = default;
};

// `["tcl.matmul", 128, 768, 768]`.
std::string encode_workload_key(const Workload& w);
// The inverse; kInvalidArgument names what is wrong (not a tcl key, unknown
// kind, wrong argument count, a non-positive extent, a conv whose output
// would be empty).
Result<Workload> decode_workload_key(std::string_view key);

// The loop structure every generator agrees on. For the tiled kinds
// (everything but softmax): spatial loops, in output-layout order, and
// reduction loops; their extents are exact (no padding of the loop space).
struct LoopExtents {
  std::vector<std::int64_t> spatial;
  std::vector<std::int64_t> reduce;
};
LoopExtents loop_extents(const Workload& w);

// Buffer sizes in floats: inputs (1 or 2) and the output.
std::vector<std::int64_t> input_sizes(const Workload& w);
std::int64_t output_size(const Workload& w);
// Floating-point operations: 2 per multiply-add (4 per element for softmax:
// max, exp, sum, divide), for GFLOP/s figures.
double flop_count(const Workload& w);

// One tuning task of a network: a workload and how often it occurs.
struct Task {
  Workload workload;
  int weight = 1;
};
// The distinct operators of a network at batch 1 (ResNet-50 and
// MobileNet-V2: 224x224 NHWC; BERT-base: sequence 128), in network order.
// kInvalidArgument for an unknown model name.
Result<std::vector<Task>> model_tasks(std::string_view model);
// "resnet50", "mobilenet_v2", "bert".
std::vector<std::string_view> model_names();

}  // namespace tcl::measure
