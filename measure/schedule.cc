// Stage layout of the compute DAGs (ids as TVM numbers them, placeholders
// included), before and after the cache write:
//   matmul, batch_matmul:   0 A, 1 B, 2 C                 -> 2 C.local, 3 C
//   conv2d, depthwise:      0 data, 1 pad, 2 kernel, 3 O  -> 3 O.local, 4 O
//   softmax:                0 X, 1 maxelem, 2 exp, 3 expsum, 4 norm
// Iterator positions are those of the stage's current loop list: a split
// into n lengths replaces one iterator by n+1, a fuse replaces k by one, a
// reorder renumbers by position.
#include "measure/schedule.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "measure/steps.h"

namespace tcl::measure {
namespace {

using namespace steps;  // NOLINT(google-build-using-namespace): the step builders, measure/steps.h

// Floats of the cache-write buffer; larger tiles are not sampled (they would
// not stay in registers or L1 and could overflow a thread's stack).
constexpr std::int64_t kMaxLocalFloats = 16384;
constexpr std::int64_t kMaxInnermostFactor = 64;  // Ansor's max_innermost_split_factor
constexpr int kUnrollSteps[] = {0, 16, 64, 512};

bool has_pad_stage(const Workload& w) { return w.kind == OpKind::kConv2d || w.kind == OpKind::kDepthwiseConv2d; }
int compute_stage(const Workload& w) { return has_pad_stage(w) ? 3 : 2; }

std::vector<int> sample_order(int n, core::SplitMix64& rng) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (rng.below(3) == 0) return order;  // the layout order (Ansor's only one) a third of the time
  for (int i = n - 1; i > 0; --i)
    std::swap(order[static_cast<std::size_t>(i)], order[rng.below(static_cast<std::uint64_t>(i) + 1)]);
  return order;
}

std::int64_t local_floats(const Schedule& s) {
  std::int64_t n = 1;
  for (const auto& t : s.spatial_tiles) n *= t[1] * t[2];
  return n;
}

std::vector<core::Step> tiled_steps(const Workload& w, const Schedule& s) {
  using core::Annotation;
  using core::StepKind;
  const LoopExtents ext = loop_extents(w);
  const int S = static_cast<int>(ext.spatial.size()), R = static_cast<int>(ext.reduce.size());
  const int c = compute_stage(w);
  std::vector<core::Step> steps;
  if (has_pad_stage(w) && s.inline_pad) steps.push_back(make(StepKind::kComputeInline, 1));
  if (s.cache_write) {
    core::Step chw = make(StepKind::kCacheWrite, c);
    chw.scope_name = "local";
    steps.push_back(chw);
  }
  std::vector<int> split_step(static_cast<std::size_t>(S));
  for (int d = 0; d < S; ++d) {
    split_step[static_cast<std::size_t>(d)] = static_cast<int>(steps.size());
    steps.push_back(
        split(c, 4 * d, ext.spatial[static_cast<std::size_t>(d)], s.spatial_tiles[static_cast<std::size_t>(d)]));
  }
  for (int r = 0; r < R; ++r) {
    steps.push_back(split(c, 4 * S + 2 * r, ext.reduce[static_cast<std::size_t>(r)],
                          {s.reduce_tiles[static_cast<std::size_t>(r)]}));
  }
  std::vector<std::int32_t> order;  // S0 S1 R0 S2 R1 S3
  for (int p : s.spatial_order) order.push_back(4 * p);
  for (int p : s.spatial_order) order.push_back(4 * p + 1);
  for (int q : s.reduce_order) order.push_back(4 * S + 2 * q);
  for (int p : s.spatial_order) order.push_back(4 * p + 2);
  for (int q : s.reduce_order) order.push_back(4 * S + 2 * q + 1);
  for (int p : s.spatial_order) order.push_back(4 * p + 3);
  steps.push_back(ids_step(StepKind::kReorder, c, order));
  const int out = s.cache_write ? c + 1 : c;  // the stage that holds the parallel loops
  if (s.cache_write) {
    for (int d = 0; d < S; ++d) {
      core::Step fsp = make(StepKind::kFollowSplit, c + 1);
      fsp.iter_id = 3 * d;
      fsp.src_step_id = split_step[static_cast<std::size_t>(d)];
      fsp.n_split = 2;
      steps.push_back(fsp);
    }
    std::vector<std::int32_t> out_order;
    for (int level = 0; level < 3; ++level) {
      for (int p : s.spatial_order) out_order.push_back(3 * p + level);
    }
    steps.push_back(ids_step(StepKind::kReorder, c + 1, out_order));
    steps.push_back(compute_at(c, c + 1, 2 * S - 1));
  }
  if (has_pad_stage(w) && !s.inline_pad) {
    steps.push_back(ids_step(StepKind::kFuse, 1, {0, 1}));  // n, h of the padded input
    steps.push_back(annotate(1, 0, Annotation::kParallel));
  }
  const int fused = s.parallel_levels * S;
  if (fused > 1) steps.push_back(ids_step(StepKind::kFuse, out, range(0, fused)));
  if (fused > 0) steps.push_back(annotate(out, 0, Annotation::kParallel));
  steps.push_back(unroll_pragma(c, s.auto_unroll_max_step));
  if (s.vectorize) {
    if (has_pad_stage(w) && !s.inline_pad) steps.push_back(annotate(1, 2, Annotation::kVectorize));
    const int shrink = fused > 1 ? fused - 1 : 0;
    if (s.cache_write) {
      steps.push_back(annotate(c, 4 * S + 2 * R - 1, Annotation::kVectorize));
      steps.push_back(annotate(c + 1, 3 * S - 1 - shrink, Annotation::kVectorize));
    } else {
      steps.push_back(annotate(c, 4 * S + 2 * R - 1 - shrink, Annotation::kVectorize));
    }
  }
  return steps;
}

std::vector<core::Step> softmax_steps(const Workload& w, const Schedule& s) {
  using core::Annotation;
  using core::StepKind;
  const std::int64_t cols = w.args[1];
  std::vector<core::Step> steps;
  if (s.inline_exp) steps.push_back(make(StepKind::kComputeInline, 2));
  for (int stage = 1; stage <= 4; ++stage) {
    if (stage == 2 && s.inline_exp) continue;
    steps.push_back(split(stage, 1, cols, {s.vector_split}));
  }
  if (s.reduce_at_row) {
    steps.push_back(compute_at(3, 4, 0));
    if (!s.inline_exp) steps.push_back(compute_at(2, 4, 0));
    steps.push_back(compute_at(1, 4, 0));
  }
  if (s.parallel) {
    for (int stage = 1; stage <= 4; ++stage) {
      if (stage < 4 && (s.reduce_at_row || (stage == 2 && s.inline_exp))) continue;
      steps.push_back(annotate(stage, 0, Annotation::kParallel));
    }
  }
  steps.push_back(unroll_pragma(4, s.auto_unroll_max_step));
  if (s.vectorize) {
    for (int stage = 1; stage <= 4; ++stage) {
      if (stage == 2 && s.inline_exp) continue;
      steps.push_back(annotate(stage, 2, Annotation::kVectorize));
    }
  }
  return steps;
}

}  // namespace

Schedule sample_schedule(const Workload& w, int vector_lanes, core::SplitMix64& rng) {
  Schedule s;
  // Probabilities are chosen so that random samples span bad and good
  // programs (the cost model must learn both), not to find the best fast.
  s.vectorize = rng.below(2) == 0;
  s.auto_unroll_max_step = kUnrollSteps[rng.below(4)];
  if (w.kind == OpKind::kSoftmax) {
    s.inline_exp = rng.below(2) == 0;
    s.reduce_at_row = rng.below(2) == 0;
    s.parallel = rng.below(5) != 0;
    s.vector_split = pick(divisors(w.args[1], kMaxInnermostFactor), rng);
    return s;
  }
  const LoopExtents ext = loop_extents(w);
  if (has_pad_stage(w)) s.inline_pad = rng.below(2) == 0;
  const std::uint64_t p = rng.below(20);
  s.parallel_levels = p < 5 ? 0 : (p < 13 ? 1 : 2);
  s.spatial_order = sample_order(static_cast<int>(ext.spatial.size()), rng);
  s.reduce_order = sample_order(static_cast<int>(ext.reduce.size()), rng);
  s.cache_write = rng.below(5) < 3;
  const std::size_t innermost = static_cast<std::size_t>(s.spatial_order.back());
  for (int attempt = 0; attempt < 32; ++attempt) {
    s.spatial_tiles.clear();
    for (std::size_t d = 0; d < ext.spatial.size(); ++d) {
      std::int64_t rest = ext.spatial[d];
      std::vector<std::int64_t> lengths(3);
      // Innermost level first (bounded like Ansor's), then outward; the
      // vectorized loop favours whole vectors when its extent allows.
      std::vector<std::int64_t> inner = divisors(rest, kMaxInnermostFactor);
      if (d == innermost && rng.below(2) == 0) {
        std::vector<std::int64_t> whole;
        for (std::int64_t x : inner) {
          if (x % vector_lanes == 0) whole.push_back(x);
        }
        if (!whole.empty()) inner = whole;
      }
      lengths[2] = pick(inner, rng);
      rest /= lengths[2];
      lengths[1] = pick(divisors(rest, rest), rng);
      rest /= lengths[1];
      lengths[0] = pick(divisors(rest, rest), rng);
      s.spatial_tiles.push_back(lengths);
    }
    if (!s.cache_write || local_floats(s) <= kMaxLocalFloats) break;
    if (attempt == 31) s.cache_write = false;
  }
  s.reduce_tiles.clear();
  for (std::int64_t e : ext.reduce) s.reduce_tiles.push_back(pick(divisors(e, kMaxInnermostFactor), rng));
  return s;
}

Status validate(const Workload& w, const Schedule& s) {
  if (s.auto_unroll_max_step < 0 || s.auto_unroll_max_step > 4096)
    return Status::invalid_argument("auto_unroll_max_step out of range");
  if (w.kind == OpKind::kSoftmax) {
    if (s.vector_split <= 0 || w.args[1] % s.vector_split != 0)
      return Status::invalid_argument("column split does not divide the columns");
    return Status::ok();
  }
  const LoopExtents ext = loop_extents(w);
  const std::size_t S = ext.spatial.size(), R = ext.reduce.size();
  if (s.spatial_tiles.size() != S || s.reduce_tiles.size() != R || s.spatial_order.size() != S ||
      s.reduce_order.size() != R) {
    return Status::invalid_argument("schedule does not match the operator's loops");
  }
  for (std::size_t d = 0; d < S; ++d) {
    const auto& t = s.spatial_tiles[d];
    if (t.size() != 3 || t[0] <= 0 || t[1] <= 0 || t[2] <= 0 || ext.spatial[d] % (t[0] * t[1] * t[2]) != 0) {
      return Status::invalid_argument("split of spatial loop " + std::to_string(d) + " does not divide its extent");
    }
  }
  for (std::size_t r = 0; r < R; ++r) {
    if (s.reduce_tiles[r] <= 0 || ext.reduce[r] % s.reduce_tiles[r] != 0) {
      return Status::invalid_argument("split of reduction loop " + std::to_string(r) + " does not divide its extent");
    }
  }
  auto is_perm = [](std::vector<int> v) {
    std::sort(v.begin(), v.end());
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] != static_cast<int>(i)) return false;
    }
    return true;
  };
  if (!is_perm(s.spatial_order) || !is_perm(s.reduce_order))
    return Status::invalid_argument("loop order is not a permutation");
  if (s.parallel_levels < 0 || s.parallel_levels > 2) return Status::invalid_argument("parallel levels out of range");
  if (s.cache_write && local_floats(s) > kMaxLocalFloats) return Status::invalid_argument("cache-write tile too large");
  return Status::ok();
}

std::vector<core::Step> to_steps(const Workload& w, const Schedule& s) {
  return w.kind == OpKind::kSoftmax ? softmax_steps(w, s) : tiled_steps(w, s);
}

Result<Schedule> from_steps(const Workload& w, const std::vector<core::Step>& steps) {
  using core::StepKind;
  // Fields the kind does not use keep their defaults, as sample_schedule()
  // leaves them, so that decoded schedules compare equal.
  Schedule s;
  s.vectorize = false;
  if (w.kind == OpKind::kSoftmax) {
    s.parallel = false;
    s.inline_exp = false;
    s.reduce_at_row = false;
  } else {
    s.parallel_levels = 0;
    if (has_pad_stage(w)) s.inline_pad = false;
  }
  bool have_pragma = false;
  for (const auto& st : steps) {
    if (st.kind == StepKind::kPragma) {
      auto limit = unroll_limit(st);
      if (!limit) return limit.status();
      s.auto_unroll_max_step = *limit;
      have_pragma = true;
    }
  }
  if (!have_pragma) return Status::invalid_argument("no auto_unroll_max_step pragma");
  if (w.kind == OpKind::kSoftmax) {
    for (const auto& st : steps) {
      if (st.kind == StepKind::kComputeInline && st.stage_id == 2) s.inline_exp = true;
      if (st.kind == StepKind::kComputeAt) s.reduce_at_row = true;
      if (st.kind == StepKind::kSplit && st.stage_id == 4 && st.lengths.size() == 1) s.vector_split = st.lengths[0];
      if (st.kind == StepKind::kAnnotation && st.stage_id == 4 &&
          st.annotation == static_cast<int>(core::Annotation::kParallel))
        s.parallel = true;
      if (st.kind == StepKind::kAnnotation && st.stage_id == 4 &&
          st.annotation == static_cast<int>(core::Annotation::kVectorize))
        s.vectorize = true;
    }
  } else {
    const LoopExtents ext = loop_extents(w);
    const int S = static_cast<int>(ext.spatial.size());
    const int c = compute_stage(w);
    for (const auto& st : steps) {
      if (st.kind == StepKind::kCacheWrite) s.cache_write = true;
      if (st.kind == StepKind::kComputeInline && st.stage_id == 1) s.inline_pad = true;
    }
    const int out = s.cache_write ? c + 1 : c;
    int fused = 0;
    bool reordered = false;
    for (const auto& st : steps) {
      if (st.kind == StepKind::kSplit && st.stage_id == c) {
        if (st.lengths.size() == 3)
          s.spatial_tiles.push_back(st.lengths);
        else if (st.lengths.size() == 1)
          s.reduce_tiles.push_back(st.lengths[0]);
        else
          return Status::invalid_argument("split with " + std::to_string(st.lengths.size()) +
                                          " lengths is not in the space");
      }
      if (st.kind == StepKind::kReorder && st.stage_id == c && !reordered) {
        reordered = true;
        const int R = static_cast<int>(ext.reduce.size());
        if (static_cast<int>(st.ids.size()) != 4 * S + 2 * R)
          return Status::invalid_argument("reorder does not list every loop");
        for (int i = 0; i < S; ++i) s.spatial_order.push_back(st.ids[static_cast<std::size_t>(i)] / 4);
        for (int i = 0; i < R; ++i) s.reduce_order.push_back((st.ids[static_cast<std::size_t>(2 * S + i)] - 4 * S) / 2);
      }
      if (st.kind == StepKind::kFuse && st.stage_id == out) fused = static_cast<int>(st.ids.size());
      if (st.kind == StepKind::kAnnotation && st.stage_id == out && st.iter_id == 0 &&
          st.annotation == static_cast<int>(core::Annotation::kParallel)) {
        if (fused == 0) fused = 1;
        if (fused % S != 0 && !(fused == 1 && S == 1))
          return Status::invalid_argument("parallel loop does not fuse whole levels");
        s.parallel_levels = std::max(1, fused / S);
      }
      if (st.kind == StepKind::kAnnotation && st.stage_id == c &&
          st.annotation == static_cast<int>(core::Annotation::kVectorize))
        s.vectorize = true;
    }
  }
  if (Status v = validate(w, s); !v) return v;
  if (to_steps(w, s) != steps)
    return Status::invalid_argument("steps are not a point of tcl-measure's schedule space for this operator");
  return s;
}

std::int64_t workspace_size(const Workload& w, const Schedule& s) {
  const auto& a = w.args;
  switch (w.kind) {
    case OpKind::kConv2d:
    case OpKind::kDepthwiseConv2d: {
      if (s.inline_pad) return 0;
      const std::int64_t pad = a[w.kind == OpKind::kConv2d ? 8 : 7];
      return a[0] * (a[1] + 2 * pad) * (a[2] + 2 * pad) * a[3];
    }
    case OpKind::kSoftmax:
      if (s.reduce_at_row) return 0;
      return 2 * a[0] + (s.inline_exp ? 0 : a[0] * a[1]);
    default: return 0;
  }
}

}  // namespace tcl::measure
