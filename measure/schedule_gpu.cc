// Stage layout (ids as TVM numbers them) of the tiled kinds, c the compute
// stage, in0/in1 the stages read by it:
//   matmul, batch_matmul:  0 A, 1 B, 2 C              (c 2, in0 0, in1 1)
//   conv2d, depthwise:     0 data, 1 pad, 2 kernel, 3 O (c 3, in0 1, in1 2)
// After CHW: c = C.local, c+1 = C. After CHR of in1 and then in0, each new
// stage sits right after the stage it reads: in0.shared = in0+1,
// in1.shared = in1+2, C.local = c+2, C = c+3.
#include "measure/schedule_gpu.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "measure/steps.h"

namespace tcl::measure {
namespace {

using namespace steps;  // NOLINT(google-build-using-namespace): the step builders, measure/steps.h

constexpr int kUnrollSteps[] = {0, 16, 64, 512, 1024};  // TVM's gpu_unroll_max_step candidates
constexpr std::int64_t kFetchVectors[] = {1, 2, 4};
constexpr int kAttempts = 2000;

bool is_conv(const Workload& w) { return w.kind == OpKind::kConv2d || w.kind == OpKind::kDepthwiseConv2d; }
int compute_stage(const Workload& w) { return is_conv(w) ? 3 : 2; }
int input_stage(const Workload& w, int input) { return (is_conv(w) ? 1 : 0) + input; }
int shared_stage(const Workload& w, int input) { return input_stage(w, input) + 1 + input; }

std::int64_t product(const std::vector<std::int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), std::int64_t{1}, std::multiplies<>());
}

// The lengths of every spatial loop, within the budgets of threads,
// vthreads and accumulators: loops in a random order (so that no loop is
// favoured by the budgets), per loop threads first (the level that matters
// most), then vthreads, innermost and inner.
std::vector<std::vector<std::int64_t>> sample_spatial(const std::vector<std::int64_t>& extents, const GpuLimits& limits,
                                                      core::SplitMix64& rng) {
  std::vector<std::size_t> order(extents.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  for (std::size_t i = order.size(); i-- > 1;) std::swap(order[i], order[rng.below(i + 1)]);
  std::int64_t threads = limits.max_threads_per_block, vthreads = limits.max_vthread_extent,
               local = limits.max_local_floats;
  std::vector<std::vector<std::int64_t>> tiles(extents.size(), std::vector<std::int64_t>(4));
  for (std::size_t d : order) {
    auto& t = tiles[d];
    std::int64_t rest = extents[d];
    t[1] = pick(divisors(rest, threads), rng);
    rest /= t[1];
    t[0] = pick(divisors(rest, std::min(vthreads, local)), rng);
    rest /= t[0];
    t[3] = pick(divisors(rest, std::min(limits.max_innermost_split_factor, local / t[0])), rng);
    rest /= t[3];
    t[2] = pick(divisors(rest, local / (t[0] * t[3])), rng);
    threads /= t[1];
    vthreads /= t[0];
    local /= t[0] * t[2] * t[3];
  }
  return tiles;
}

std::vector<core::Step> multi_level_tiling(const Workload& w, const GpuSchedule& s, std::vector<int>* split_steps) {
  using core::StepKind;
  const LoopExtents ext = loop_extents(w);
  const int S = static_cast<int>(ext.spatial.size()), R = static_cast<int>(ext.reduce.size());
  const int c = compute_stage(w);
  std::vector<core::Step> steps;
  core::Step chw = make(StepKind::kCacheWrite, c);
  chw.scope_name = "local";
  steps.push_back(chw);
  for (int d = 0; d < S; ++d) {
    split_steps->push_back(static_cast<int>(steps.size()));
    const auto i = static_cast<std::size_t>(d);
    steps.push_back(split(c, 5 * d, ext.spatial[i], s.spatial_tiles[i]));
  }
  for (int r = 0; r < R; ++r) {
    const auto i = static_cast<std::size_t>(r);
    steps.push_back(split(c, 5 * S + 3 * r, ext.reduce[i], s.reduce_tiles[i]));
  }
  std::vector<std::int32_t> order;  // S0 S1 S2 R0 R1 S3 R2 S4
  auto spatial = [&](int level) {
    for (int d = 0; d < S; ++d) order.push_back(5 * d + level);
  };
  auto reduce = [&](int level) {
    for (int r = 0; r < R; ++r) order.push_back(5 * S + 3 * r + level);
  };
  for (int level : {0, 1, 2}) spatial(level);
  reduce(0);
  reduce(1);
  spatial(3);
  reduce(2);
  spatial(4);
  steps.push_back(ids_step(StepKind::kReorder, c, order));
  for (int d = 0; d < S; ++d) {
    core::Step fsp = make(StepKind::kFollowSplit, c + 1);
    fsp.iter_id = 4 * d;
    fsp.src_step_id = (*split_steps)[static_cast<std::size_t>(d)];
    fsp.n_split = 3;
    steps.push_back(fsp);
  }
  std::vector<std::int32_t> out_order;
  for (int level = 0; level < 4; ++level) {
    for (int d = 0; d < S; ++d) out_order.push_back(4 * d + level);
  }
  steps.push_back(ids_step(StepKind::kReorder, c + 1, out_order));
  steps.push_back(compute_at(c, c + 1, 3 * S - 1));
  return steps;
}

}  // namespace

GpuLimits gpu_limits(const core::HardwareParams& p) {
  GpuLimits l;
  if (p.max_threads_per_block > 0) l.max_threads_per_block = p.max_threads_per_block;
  if (p.warp_size > 0) l.warp_size = p.warp_size;
  if (p.max_shared_memory_per_block > 0) l.max_shared_memory_per_block = p.max_shared_memory_per_block;
  if (p.max_vthread_extent > 0) l.max_vthread_extent = p.max_vthread_extent;
  return l;
}

bool gpu_supported(const Workload& w) { return w.kind != OpKind::kSoftmax; }

GpuShape gpu_shape(const Workload& w, const GpuSchedule& s) {
  const LoopExtents ext = loop_extents(w);
  GpuShape g;
  for (std::size_t d = 0; d < s.spatial_tiles.size(); ++d) {
    const auto& t = s.spatial_tiles[d];
    g.block_tile.push_back(product(t));
    g.blocks *= ext.spatial[d] / g.block_tile.back();
    g.vthreads *= t[0];
    g.threads *= t[1];
    g.local_floats *= t[0] * t[2] * t[3];
  }
  for (const auto& t : s.reduce_tiles) g.reduce_tile.push_back(product(t));
  const auto& T = g.block_tile;
  const auto& K = g.reduce_tile;
  switch (w.kind) {
    case OpKind::kMatmul:
      g.shared_dims[0] = {T[0], K[0]};
      g.shared_dims[1] = {K[0], T[1]};
      break;
    case OpKind::kBatchMatmul:
      g.shared_dims[0] = {T[0], T[1], K[0]};
      g.shared_dims[1] = {T[0], K[0], T[2]};
      break;
    case OpKind::kConv2d: {
      const std::int64_t st = w.args[7];
      g.shared_dims[0] = {T[0], (T[1] - 1) * st + K[0], (T[2] - 1) * st + K[1], K[2]};
      g.shared_dims[1] = {K[0], K[1], K[2], T[3]};
      break;
    }
    case OpKind::kDepthwiseConv2d: {
      const std::int64_t st = w.args[6];
      g.shared_dims[0] = {T[0], (T[1] - 1) * st + K[0], (T[2] - 1) * st + K[1], T[3]};
      g.shared_dims[1] = {K[0], K[1], T[3]};
      break;
    }
    case OpKind::kSoftmax: break;
  }
  for (int i = 0; i < 2; ++i) g.shared_floats[i] = product(g.shared_dims[i]);
  return g;
}

Status validate_gpu(const Workload& w, const GpuSchedule& s, const GpuLimits& limits) {
  if (!gpu_supported(w)) return Status::invalid_argument("the GPU sketch does not cover softmax");
  if (s.auto_unroll_max_step < 0 || s.auto_unroll_max_step > 4096)
    return Status::invalid_argument("auto_unroll_max_step out of range");
  const LoopExtents ext = loop_extents(w);
  if (s.spatial_tiles.size() != ext.spatial.size() || s.reduce_tiles.size() != ext.reduce.size() ||
      s.fetch_vector.size() != 2)
    return Status::invalid_argument("schedule does not match the operator's loops");
  auto divides = [](const std::vector<std::int64_t>& t, std::size_t n, std::int64_t extent) {
    if (t.size() != n) return false;
    for (std::int64_t x : t) {
      if (x <= 0) return false;
    }
    return extent % product(t) == 0;
  };
  for (std::size_t d = 0; d < ext.spatial.size(); ++d) {
    if (!divides(s.spatial_tiles[d], 4, ext.spatial[d]))
      return Status::invalid_argument("split of spatial loop " + std::to_string(d) + " does not divide its extent");
  }
  for (std::size_t r = 0; r < ext.reduce.size(); ++r) {
    if (!divides(s.reduce_tiles[r], 2, ext.reduce[r]))
      return Status::invalid_argument("split of reduction loop " + std::to_string(r) + " does not divide its extent");
  }
  const GpuShape g = gpu_shape(w, s);
  for (int i = 0; i < 2; ++i) {
    const std::int64_t v = s.fetch_vector[static_cast<std::size_t>(i)];
    if (v <= 0 || g.shared_floats[i] % v != 0)
      return Status::invalid_argument("fetch vector of input " + std::to_string(i) + " does not divide its tile");
  }
  if (g.threads > limits.max_threads_per_block) return Status::invalid_argument("too many threads per block");
  if (g.vthreads > limits.max_vthread_extent) return Status::invalid_argument("vthread extent too large");
  if (4 * (g.shared_floats[0] + g.shared_floats[1]) > limits.max_shared_memory_per_block)
    return Status::invalid_argument("shared memory per block exceeds the limit");
  if (g.local_floats > limits.max_local_floats) return Status::invalid_argument("too many accumulators per thread");
  return Status::ok();
}

GpuSchedule sample_gpu_schedule(const Workload& w, const GpuLimits& limits, core::SplitMix64& rng) {
  const LoopExtents ext = loop_extents(w);
  GpuSchedule s;
  s.auto_unroll_max_step = kUnrollSteps[rng.below(std::size(kUnrollSteps))];
  const bool want_warps = rng.below(4) < 3;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    s.spatial_tiles = sample_spatial(ext.spatial, limits, rng);
    s.reduce_tiles.clear();
    for (std::int64_t e : ext.reduce) {
      const std::int64_t inner = pick(divisors(e, limits.max_innermost_split_factor), rng);
      s.reduce_tiles.push_back({pick(divisors(e / inner, e), rng), inner});
    }
    const GpuShape g = gpu_shape(w, s);
    s.fetch_vector.clear();
    for (int i = 0; i < 2; ++i) {
      std::vector<std::int64_t> ok;
      for (std::int64_t v : kFetchVectors) {
        if (g.shared_floats[i] % v == 0) ok.push_back(v);
      }
      s.fetch_vector.push_back(pick(ok, rng));
    }
    // TVM's InitThreadBind drops states with fewer threads than a warp
    // (unless the whole output is that small); the preference for whole
    // warps gives way after half the attempts.
    if (g.threads < std::min(limits.warp_size, output_size(w))) continue;
    if (want_warps && attempt < kAttempts / 2 && g.threads % limits.warp_size != 0) continue;
    if (validate_gpu(w, s, limits)) return s;
  }
  // Nothing fitted: one thread, one element per block (always valid).
  for (auto& t : s.spatial_tiles) t = {1, 1, 1, 1};
  for (auto& t : s.reduce_tiles) t = {1, 1};
  s.fetch_vector = {1, 1};
  return s;
}

std::vector<core::Step> to_gpu_steps(const Workload& w, const GpuSchedule& s) {
  using core::Annotation;
  using core::StepKind;
  const LoopExtents ext = loop_extents(w);
  const int S = static_cast<int>(ext.spatial.size()), R = static_cast<int>(ext.reduce.size());
  std::vector<int> split_steps;
  std::vector<core::Step> steps = multi_level_tiling(w, s, &split_steps);
  int local = compute_stage(w);
  for (int input = 1; input >= 0; --input) {  // TVM visits stages from the last
    core::Step chr = ids_step(StepKind::kCacheRead, input_stage(w, input), {local});
    chr.scope_name = "shared";
    steps.push_back(chr);
    ++local;
    steps.push_back(compute_at(input_stage(w, input) + 1, local, 3 * S + R - 1));
  }
  if (is_conv(w)) steps.push_back(make(StepKind::kComputeInline, 1));
  const int out = local + 1;
  const Annotation binds[] = {Annotation::kBlockX, Annotation::kVThread, Annotation::kThreadX};
  for (int level = 0; level < 3; ++level) {
    steps.push_back(ids_step(StepKind::kFuse, out, range(level, S)));
    steps.push_back(annotate(out, level, binds[level]));
  }
  const GpuShape g = gpu_shape(w, s);
  std::vector<std::int32_t> src(split_steps.rbegin(), split_steps.rend());
  for (int input = 1; input >= 0; --input) {
    const int sh = shared_stage(w, input);
    const auto i = static_cast<std::size_t>(input);
    steps.push_back(ids_step(StepKind::kFuse, sh, range(0, static_cast<int>(g.shared_dims[i].size()))));
    steps.push_back(split(sh, 0, g.shared_floats[i], {s.fetch_vector[i]}));
    steps.push_back(annotate(sh, 1, Annotation::kVectorize));
    core::Step ffsp = ids_step(StepKind::kFollowFusedSplit, sh, src);
    ffsp.level = 1;
    ffsp.inner_to_outer = true;  // factor_or_nparts: the thread count is the factor
    steps.push_back(ffsp);
    steps.push_back(annotate(sh, 1, Annotation::kThreadX));
  }
  core::Step pr = make(StepKind::kPragma, local);
  pr.pragma_type = std::string(kUnrollPragma) + std::to_string(s.auto_unroll_max_step);
  steps.push_back(pr);
  return steps;
}

Result<GpuSchedule> gpu_from_steps(const Workload& w, const std::vector<core::Step>& steps, const GpuLimits& limits) {
  using core::StepKind;
  if (!gpu_supported(w)) return Status::invalid_argument("the GPU sketch does not cover softmax");
  GpuSchedule s;
  s.fetch_vector = {0, 0};
  bool have_pragma = false;
  const int c = compute_stage(w);
  for (const auto& st : steps) {
    if (st.kind == StepKind::kPragma) {
      auto limit = unroll_limit(st);
      if (!limit) return limit.status();
      s.auto_unroll_max_step = *limit;
      have_pragma = true;
    }
    if (st.kind != StepKind::kSplit) continue;
    if (st.stage_id == c && st.lengths.size() == 4)
      s.spatial_tiles.push_back(st.lengths);
    else if (st.stage_id == c && st.lengths.size() == 2)
      s.reduce_tiles.push_back(st.lengths);
    else if (st.lengths.size() == 1 && st.stage_id == shared_stage(w, 0))
      s.fetch_vector[0] = st.lengths[0];
    else if (st.lengths.size() == 1 && st.stage_id == shared_stage(w, 1))
      s.fetch_vector[1] = st.lengths[0];
    else
      return Status::invalid_argument("split of stage " + std::to_string(st.stage_id) + " is not in the space");
  }
  if (!have_pragma) return Status::invalid_argument("no auto_unroll_max_step pragma");
  if (Status v = validate_gpu(w, s, limits); !v) return v;
  if (to_gpu_steps(w, s) != steps)
    return Status::invalid_argument("steps are not a point of tcl-measure's GPU schedule space for this operator");
  return s;
}

}  // namespace tcl::measure
