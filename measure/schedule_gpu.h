// measure/schedule_gpu.h — a point of tcl-measure's GPU schedule space
// (Ansor's GPU sketch), its spelling as TVM transform steps, and back.
//
// The tiled kinds (matmul, batch_matmul, conv2d NHWC, depthwise conv2d NHWC;
// not softmax) follow the sketch TVM's auto-scheduler generates for CUDA
// (sketch_policy_rules.cc: always cache write on GPU, multi-level tiling
// "SSSRRSRS", cache read of every input into shared memory computed at the
// outermost reduction tile, padding inlined; init population: fused
// block / vthread / thread bindings, cooperative fetching, unroll pragma):
//   CHW c "local"; SP c per spatial loop (4 lengths: vthread, threadIdx,
//   inner, innermost; the rest is blockIdx); SP c per reduction loop (2
//   lengths); RE c S0 S1 S2 R0 R1 S3 R2 S4; FSP of the output per spatial
//   loop (n_split 3), RE of the output; CA c.local at the thread level; per
//   input, last stage first: CHR "shared" + CA at the last R0 loop; CI of
//   the padding stage (convolutions); FU+AN of the output's three outer
//   levels (blockIdx.x 5, vthread 4, threadIdx.x 6); per shared stage,
//   highest id first: FU of its loops, SP by the fetch vector length, AN
//   vectorize, FFSP by the thread count (level 1 of the spatial splits, last
//   first), AN threadIdx.x; PR c.local auto_unroll_max_step$N.
// Step fields, ids and order are those of TVM's CUDA logs (compare the
// matmul_layer / conv2d_layer records of shared/data/gpu-v100). Spatial and
// reduction loops keep their layout order, as TVM's sketch does.
//
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "core/random.h"
#include "core/record.h"
#include "core/status.h"
#include "measure/operators.h"

namespace tcl::measure {

// The limits a GPU schedule must respect: TVM's hardware_params for CUDA
// plus two bounds of the sampler.
struct GpuLimits {
  std::int64_t max_threads_per_block = 1024;
  std::int64_t warp_size = 32;
  std::int64_t max_shared_memory_per_block = 49152;  // bytes
  std::int64_t max_vthread_extent = 8;
  std::int64_t max_innermost_split_factor = 64;  // Ansor's sampler bound
  // Accumulators per thread (registers); not a TVM parameter: larger tiles
  // would spill to local memory and only slow the search down.
  std::int64_t max_local_floats = 256;
};
// The limits of `params` (max_shared_memory_per_block, max_threads_per_block,
// max_vthread_extent, warp_size; fields <= 0 keep the defaults).
GpuLimits gpu_limits(const core::HardwareParams& params);

struct GpuSchedule {
  // Per spatial loop: lengths of levels 1..4 (vthread, threadIdx, inner,
  // innermost); level 0 (blockIdx) is the rest.
  std::vector<std::vector<std::int64_t>> spatial_tiles;
  // Per reduction loop: lengths of levels 1..2; level 0 is the rest.
  std::vector<std::vector<std::int64_t>> reduce_tiles;
  // Per input (in0, in1): the vectorized length of its cooperative fetch.
  std::vector<std::int64_t> fetch_vector;
  int auto_unroll_max_step = 0;  // PR auto_unroll_max_step$N

  bool operator==(const GpuSchedule&) const = default;
};

// Whether the GPU sketch covers `w` (every kind but softmax).
bool gpu_supported(const Workload& w);

// Samples a schedule for `w` (gpu_supported) that respects `limits`;
// deterministic for the state of `rng`. Like TVM's InitThreadBind, never
// fewer threads than a warp (unless the output is smaller); three in four
// samples have a thread count that is a multiple of the warp size. Tile
// sizes are drawn level by level (threads, vthreads, innermost, inner),
// not uniformly over factorizations as TVM's InitFillTileSize does.
GpuSchedule sample_gpu_schedule(const Workload& w, const GpuLimits& limits, core::SplitMix64& rng);

// The schedule as TVM steps (the layout in this header's comment).
std::vector<core::Step> to_gpu_steps(const Workload& w, const GpuSchedule& s);

// The inverse: decodes steps produced by to_gpu_steps(). kInvalidArgument
// when the steps are not a point of this space for `w`.
Result<GpuSchedule> gpu_from_steps(const Workload& w, const std::vector<core::Step>& steps, const GpuLimits& limits);

// OK or kInvalidArgument with the reason: vector shapes, exact splits, and
// the limits (threads, vthreads, shared memory, accumulators).
Status validate_gpu(const Workload& w, const GpuSchedule& s, const GpuLimits& limits);

// Derived sizes of a valid schedule.
struct GpuShape {
  std::int64_t blocks = 1;                   // grid size (fused level-0 loops)
  std::int64_t threads = 1;                  // threads per block (fused level-2 loops)
  std::int64_t vthreads = 1;                 // fused level-1 loops
  std::int64_t local_floats = 1;             // accumulators per thread
  std::vector<std::int64_t> block_tile;      // per spatial loop: its extent in one block
  std::vector<std::int64_t> reduce_tile;     // per reduction loop: its extent in one R0 step
  std::vector<std::int64_t> shared_dims[2];  // per input: the shared array's dims (input layout)
  std::int64_t shared_floats[2] = {0, 0};
};
GpuShape gpu_shape(const Workload& w, const GpuSchedule& s);

}  // namespace tcl::measure
