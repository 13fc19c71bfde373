// measure/schedule.h — a point of tcl-measure's Ansor-like schedule space, its
// spelling as TVM transform steps, and back.
//
// Tiled kinds (matmul, batch_matmul, conv2d, depthwise conv2d) follow Ansor's
// CPU sketch "multi-level tiling (SSRSRS) with an optional cache write":
// every spatial loop is split into 4 levels (SP with 3 lengths), every
// reduction loop into 2; the loops are reordered S0 S1 R0 S2 R1 S3 (RE), with
// the spatial and the reduction loops in a sampled order inside each level.
// With a cache write (CHW "local") the output stage follows the splits (FSP)
// and the local stage is computed at its second level (CA); the outer levels
// are fused and parallel (FU, AN 3), the innermost loop vectorized (AN 2),
// loops unrolled up to PR auto_unroll_max_step$N. Convolutions either inline
// the padding stage (CI) or compute it at root, fused and parallel.
// Softmax follows TVM's four stages (max, exp, sum, normalize): exp inlined
// or not, the reductions computed at the row of the output or at root, rows
// parallel, the inner loops split and vectorized.
//
// Stage ids and iterator positions are those TVM's loop state would have,
// so records look like the auto-scheduler's own (see the table in
// schedule.cc). Every split divides its extent exactly.
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

struct Schedule {
  // Tiled kinds.
  bool cache_write = false;
  // Per spatial loop: the lengths of levels 1..3 (level 0 is the rest).
  std::vector<std::vector<std::int64_t>> spatial_tiles;
  // Per reduction loop: the length of the inner level.
  std::vector<std::int64_t> reduce_tiles;
  std::vector<int> spatial_order;  // a permutation of the spatial loops
  std::vector<int> reduce_order;   // a permutation of the reduction loops
  int parallel_levels = 1;         // outer levels fused and parallel: 0, 1 or 2
  bool inline_pad = true;          // convolutions: CI of the padding stage
  // Softmax.
  bool inline_exp = true;         // CI of the exp stage
  bool reduce_at_row = true;      // max/sum computed at the output's row (CA), else at root
  std::int64_t vector_split = 1;  // inner length of the column loops (SP)
  // Both.
  bool vectorize = true;         // innermost loops vectorized (AN 2)
  bool parallel = true;          // softmax: rows parallel (tiled kinds use parallel_levels)
  int auto_unroll_max_step = 0;  // PR auto_unroll_max_step$N

  bool operator==(const Schedule&) const = default;
};

// Samples a schedule for `w` (always valid for it; a seed gives the same
// schedules on every machine, core/random.h). `vector_lanes` (floats
// per vector register) biases the innermost tile sizes toward it, as Ansor's
// max_innermost_split_factor does.
Schedule sample_schedule(const Workload& w, int vector_lanes, core::SplitMix64& rng);

// The schedule as TVM steps.
std::vector<core::Step> to_steps(const Workload& w, const Schedule& s);

// The inverse: decodes steps produced by to_steps(). kInvalidArgument when
// the steps are not a point of this space for `w` (another sketch, splits
// that do not divide, a foreign stage layout...).
Result<Schedule> from_steps(const Workload& w, const std::vector<core::Step>& steps);

// Whether `s` is a valid point for `w` (shapes of the vectors, exact splits,
// permutations, bounded local buffer). OK or kInvalidArgument with the reason.
Status validate(const Workload& w, const Schedule& s);

// Floats of scratch memory the generated program needs (padding, softmax
// buffers computed at root).
std::int64_t workspace_size(const Workload& w, const Schedule& s);

}  // namespace tcl::measure
