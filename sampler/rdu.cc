// sampler/rdu.cc — see rdu.h. Layout: a task's normalized embeddings are
// gathered once into a transposed, zero-padded buffer xt[c · ld + i]
// (c < dim, i < ld = size rounded up to kBlock), so "dot products of one
// vector with every candidate of the task" (R's similarity rows, D's running
// min after each pick) is a plain loop over contiguous floats, kBlock
// candidates at a time with their accumulators in registers. Each dot is
// summed over c in order, so the AVX2 and baseline clones of the kernels give
// bit-identical results (checked: same picks either way).
#include "sampler/rdu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "core/random.h"

namespace tcl::sampler {
namespace {

// Candidates per kernel block; every padded count is a multiple.
constexpr int64_t kBlock = 32;
// Top-k by insertion up to this k; above it, nth_element + sort.
constexpr int64_t kInsertionTopK = 32;
// Quotas are computed in int64: rest · size must not overflow.
constexpr int64_t kMaxTotalSize = int64_t{1} << 31;

int64_t pad_block(int64_t n) { return (n + kBlock - 1) / kBlock * kBlock; }

// --- seeded randomness (core/random.h, so results do not move with the C++ library)

using core::splitmix64;
using core::SplitMix64;

// Independent streams per (seed, task, purpose).
enum class Stream : uint64_t { kRandom = 1, kReference = 2 };
uint64_t stream_seed(uint64_t seed, int32_t task, Stream purpose) {
  return splitmix64(
      seed ^ splitmix64((static_cast<uint64_t>(static_cast<uint32_t>(task)) << 8) | static_cast<uint64_t>(purpose)));
}

// The greedy's tie-break key for a pool index.
uint64_t tie_hash(uint64_t seed, int64_t index) { return splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(index)); }

// Partial Fisher–Yates: the first `take` entries of `items` become a uniform
// sample (in sample order).
template <typename T>
void partial_shuffle(std::vector<T>& items, int64_t take, SplitMix64& rng) {
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t p = 0; p < take; ++p) {
    const int64_t j = p + static_cast<int64_t>(rng.below_unbiased(static_cast<uint64_t>(n - p)));
    std::swap(items[p], items[j]);
  }
}

// --- kernels ---------------------------------------------------------------

// GCC vector types: V8 is one AVX register (the avx2 clones), V4 one SSE
// register (baseline x86-64). Each output lane sums q[c] · x[c] over c in
// order with IEEE mul and add and no contraction (-ffp-contract=off, no FMA
// in the target list), so both clones give bit-identical results.
using V4 = float __attribute__((vector_size(16)));
using V8 = float __attribute__((vector_size(32)));
static_assert(sizeof(V4) == 16 && sizeof(V8) == 32, "vector_size must hold (GCC drops it from some aliases)");

// out[j] = Σ_c q[c] · xt[c·ld + j0 + j] for j < kBlock. The kBlock / lanes
// accumulators stay in registers; no vector crosses a call (the ABI differs
// between clones).
template <typename V>
[[gnu::always_inline]] inline void block_dots(const float* xt, int64_t ld, int64_t j0, const float* q, int64_t dim,
                                              float* out) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  constexpr int64_t kAcc = kBlock / kLanes;
  static_assert(kBlock % kLanes == 0 && kAcc <= 8);
  V acc[kAcc] = {};
  const float* row = xt + j0;
  for (int64_t c = 0; c < dim; ++c, row += ld) {
    const float qc = q[c];
#pragma GCC unroll 8
    for (int64_t v = 0; v < kAcc; ++v) {
      V x;
      std::memcpy(&x, row + v * kLanes, sizeof x);
      acc[v] += x * qc;
    }
  }
  std::memcpy(out, acc, sizeof acc);
}

// out[j] = Σ_c q[c] · xt[c·ld + j] for j < n_pad (a multiple of kBlock).
template <typename V>
[[gnu::always_inline]] inline void dots_impl(const float* xt, int64_t ld, int64_t n_pad, const float* q, int64_t dim,
                                             float* out) {
  for (int64_t j0 = 0; j0 < n_pad; j0 += kBlock) block_dots<V>(xt, ld, j0, q, dim, out + j0);
}

// dmin[j] = min(dmin[j], 1 − Σ_c q[c] · xt[c·ld + j]) for j < n_pad.
template <typename V>
[[gnu::always_inline]] inline void update_min_distance_impl(const float* xt, int64_t ld, int64_t n_pad, const float* q,
                                                            int64_t dim, float* dmin) {
  for (int64_t j0 = 0; j0 < n_pad; j0 += kBlock) {
    float acc[kBlock];
    block_dots<V>(xt, ld, j0, q, dim, acc);
    for (int64_t l = 0; l < kBlock; ++l) {
      const float d = 1.0f - acc[l];
      dmin[j0 + l] = d < dmin[j0 + l] ? d : dmin[j0 + l];
    }
  }
}

// The two kernels, per instruction set; chosen once per select() call.
struct Kernels {
  void (*dots)(const float*, int64_t, int64_t, const float*, int64_t, float*);
  void (*update_min_distance)(const float*, int64_t, int64_t, const float*, int64_t, float*);
};

void dots_baseline(const float* xt, int64_t ld, int64_t n, const float* q, int64_t dim, float* out) {
  dots_impl<V4>(xt, ld, n, q, dim, out);
}
void update_min_distance_baseline(const float* xt, int64_t ld, int64_t n, const float* q, int64_t dim, float* dmin) {
  update_min_distance_impl<V4>(xt, ld, n, q, dim, dmin);
}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
[[gnu::target("avx2")]] void dots_avx2(const float* xt, int64_t ld, int64_t n, const float* q, int64_t dim,
                                       float* out) {
  dots_impl<V8>(xt, ld, n, q, dim, out);
}
[[gnu::target("avx2")]] void update_min_distance_avx2(const float* xt, int64_t ld, int64_t n, const float* q,
                                                      int64_t dim, float* dmin) {
  update_min_distance_impl<V8>(xt, ld, n, q, dim, dmin);
}
#endif

Kernels pick_kernels() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2")) return {dots_avx2, update_min_distance_avx2};
#endif
  return {dots_baseline, update_min_distance_baseline};
}

// out = row / ‖row‖ (a zero row stays zero). The norm is summed in order in
// double.
void normalize_row(const float* row, int64_t dim, float* out) {
  double ss = 0;
  for (int64_t c = 0; c < dim; ++c) ss += static_cast<double>(row[c]) * row[c];
  const double inv = ss > 0 ? 1.0 / std::sqrt(ss) : 0.0;
  for (int64_t c = 0; c < dim; ++c) out[c] = static_cast<float>(row[c] * inv);
}

// Min-max to [0, 1] in place; a constant range (or an empty one) → 0.5.
void min_max_normalize(std::vector<double>& v, int64_t n) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, v[i]);
    hi = std::max(hi, v[i]);
  }
  const double range = hi - lo;
  for (int64_t i = 0; i < n; ++i) v[i] = range > 0 ? (v[i] - lo) / range : 0.5;
}

// --- validation --------------------------------------------------------------

Status bad(std::string m) { return Status::invalid_argument(std::move(m)); }

bool finite_nonnegative(double w) { return std::isfinite(w) && w >= 0; }

Status validate(const Pool& pool, const SampleOptions& options) {
  if (pool.count < 1) return bad("pool is empty (count = " + std::to_string(pool.count) + ")");
  if (pool.dim < 1) return bad("pool dim must be >= 1, got " + std::to_string(pool.dim));
  if (pool.num_tasks < 1) return bad("pool num_tasks must be >= 1, got " + std::to_string(pool.num_tasks));
  const auto n = static_cast<uint64_t>(pool.count);
  const auto dim = static_cast<uint64_t>(pool.dim);
  if (pool.embeddings.size() / dim != n || pool.embeddings.size() % dim != 0) {
    return bad("embeddings has " + std::to_string(pool.embeddings.size()) +
               " values, want count*dim = " + std::to_string(pool.count) + "*" + std::to_string(pool.dim));
  }
  if (!pool.uncertainty.empty() && pool.uncertainty.size() != n) {
    return bad("uncertainty has " + std::to_string(pool.uncertainty.size()) +
               " values, want count = " + std::to_string(pool.count) + " or none");
  }
  if (pool.task.size() != n) {
    return bad("task has " + std::to_string(pool.task.size()) + " values, want count = " + std::to_string(pool.count));
  }
  if (pool.measured_count < 0) {
    return bad("measured_count must be >= 0, got " + std::to_string(pool.measured_count));
  }
  const auto m = static_cast<uint64_t>(pool.measured_count);
  if (pool.measured_embeddings.size() / dim != m || pool.measured_embeddings.size() % dim != 0) {
    return bad("measured_embeddings has " + std::to_string(pool.measured_embeddings.size()) +
               " values, want measured_count*dim = " + std::to_string(pool.measured_count) + "*" +
               std::to_string(pool.dim));
  }
  if (pool.measured_task.size() != m) {
    return bad("measured_task has " + std::to_string(pool.measured_task.size()) +
               " values, want measured_count = " + std::to_string(pool.measured_count));
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (pool.task[i] < 0 || pool.task[i] >= pool.num_tasks) {
      return bad("task[" + std::to_string(i) + "] = " + std::to_string(pool.task[i]) +
                 " is out of range [0, num_tasks = " + std::to_string(pool.num_tasks) + ")");
    }
  }
  for (std::size_t i = 0; i < m; ++i) {
    if (pool.measured_task[i] < 0 || pool.measured_task[i] >= pool.num_tasks) {
      return bad("measured_task[" + std::to_string(i) + "] = " + std::to_string(pool.measured_task[i]) +
                 " is out of range [0, num_tasks = " + std::to_string(pool.num_tasks) + ")");
    }
  }
  for (std::size_t i = 0; i < pool.uncertainty.size(); ++i) {
    if (!finite_nonnegative(pool.uncertainty[i])) {
      return bad("uncertainty[" + std::to_string(i) + "] = " + std::to_string(pool.uncertainty[i]) +
                 " must be finite and >= 0");
    }
  }
  if (options.strategy == Strategy::kFast && pool.predicted.size() != n) {
    return bad("strategy fast needs predicted scores for every candidate: predicted has " +
               std::to_string(pool.predicted.size()) + " values, count is " + std::to_string(n));
  }
  for (std::size_t i = 0; i < pool.predicted.size(); ++i) {
    if (!std::isfinite(pool.predicted[i])) {
      return bad("predicted[" + std::to_string(i) + "] = " + std::to_string(pool.predicted[i]) + " must be finite");
    }
  }
  for (std::size_t i = 0; i < pool.embeddings.size(); ++i) {
    if (!std::isfinite(pool.embeddings[i])) {
      return bad("embeddings of candidate " + std::to_string(i / dim) + " has a non-finite value at column " +
                 std::to_string(i % dim));
    }
  }
  for (std::size_t i = 0; i < pool.measured_embeddings.size(); ++i) {
    if (!std::isfinite(pool.measured_embeddings[i])) {
      return bad("measured_embeddings of measured program " + std::to_string(i / dim) +
                 " has a non-finite value at column " + std::to_string(i % dim));
    }
  }

  if (options.budget < 1 || options.budget > pool.count) {
    return bad("budget " + std::to_string(options.budget) + " must be in [1, count = " + std::to_string(pool.count) +
               "]");
  }
  if (options.min_per_task < 0) {
    return bad("min_per_task must be >= 0, got " + std::to_string(options.min_per_task));
  }
  if (options.knn < 0) return bad("knn must be >= 0, got " + std::to_string(options.knn));
  if (!(options.random_share >= 0 && options.random_share <= 1)) {
    return bad("random_share must be in [0, 1], got " + std::to_string(options.random_share));
  }
  if (strategy_name(options.strategy).empty()) {
    return bad("strategy " + std::to_string(static_cast<int>(options.strategy)) + " is unknown");
  }
  if (options.strategy == Strategy::kRdu) {
    const Weights& w = options.weights;
    if (!finite_nonnegative(w.r) || !finite_nonnegative(w.d) || !finite_nonnegative(w.u)) {
      return bad("weights must be finite and >= 0, got r=" + std::to_string(w.r) + " d=" + std::to_string(w.d) +
                 " u=" + std::to_string(w.u));
    }
    if (w.r == 0 && w.d == 0 && w.u == 0) return bad("weights are all zero: nothing to rank by");
  }
  return Status::ok();
}

// Candidates (or measured programs) grouped by task: members of task t are
// order[offset[t] .. offset[t+1]), in pool order.
struct Groups {
  std::vector<int64_t> offset;
  std::vector<int64_t> order;
  int64_t size(int32_t t) const { return offset[t + 1] - offset[t]; }
};

Groups group_by_task(std::span<const int32_t> task, int32_t num_tasks) {
  Groups g;
  g.offset.assign(static_cast<std::size_t>(num_tasks) + 1, 0);
  for (const int32_t t : task) ++g.offset[t + 1];
  for (int32_t t = 0; t < num_tasks; ++t) g.offset[t + 1] += g.offset[t];
  g.order.resize(task.size());
  std::vector<int64_t> next(g.offset.begin(), g.offset.end() - 1);
  for (std::size_t i = 0; i < task.size(); ++i) g.order[next[task[i]]++] = static_cast<int64_t>(i);
  return g;
}

// Buffers for one task, sized once for the largest task of the call.
struct Workspace {
  Kernels kernels = pick_kernels();
  std::vector<float> xt;         // dim × ld, transposed normalized embeddings
  std::vector<float> ref_t;      // dim × ld_ref, the reference subset (large tasks)
  std::vector<float> sims;       // ld_ref
  std::vector<float> scratch;    // ld_ref (top-k by nth_element)
  std::vector<float> q;          // dim, one normalized vector
  std::vector<int64_t> locals;   // size, local indices (reference subset draw)
  std::vector<int64_t> ref_pos;  // size, a local index's position in the subset or -1
  std::vector<double> r, u, base;
  std::vector<float> dmin;  // ld
  std::vector<uint64_t> tie;
  std::vector<unsigned char> alive;
};

// Raw Representativeness of the task's n candidates (in ws.xt) into ws.r.
void representativeness(Workspace& ws, int64_t n, int64_t dim, int32_t k, uint64_t seed, int32_t task) {
  if (k == 0) {
    std::fill(ws.r.begin(), ws.r.begin() + n, 1.0);
    return;
  }
  const int64_t ld = pad_block(n);
  const float* ref = ws.xt.data();
  int64_t ref_ld = ld;
  int64_t n_ref = n;
  bool subset = n > kRduMaxReference;
  if (subset) {
    // A seeded subset of kRduMaxReference local indices, in ascending order.
    n_ref = kRduMaxReference;
    ref_ld = pad_block(n_ref);
    ws.locals.resize(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) ws.locals[i] = i;
    SplitMix64 rng(stream_seed(seed, task, Stream::kReference));
    partial_shuffle(ws.locals, n_ref, rng);
    std::sort(ws.locals.begin(), ws.locals.begin() + n_ref);
    std::fill(ws.ref_pos.begin(), ws.ref_pos.begin() + n, -1);
    std::fill(ws.ref_t.begin(), ws.ref_t.begin() + dim * ref_ld, 0.0f);
    for (int64_t p = 0; p < n_ref; ++p) {
      const int64_t i = ws.locals[p];
      ws.ref_pos[i] = p;
      for (int64_t c = 0; c < dim; ++c) ws.ref_t[c * ref_ld + p] = ws.xt[c * ld + i];
    }
    ref = ws.ref_t.data();
  }
  float* sims = ws.sims.data();
  float* q = ws.q.data();
  float top[kInsertionTopK];
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < dim; ++c) q[c] = ws.xt[c * ld + i];
    ws.kernels.dots(ref, ref_ld, ref_ld, q, dim, sims);
    const int64_t self = subset ? ws.ref_pos[i] : i;
    double sum = 0;
    if (k <= kInsertionTopK) {
      // Descending top[0..filled).
      int64_t filled = 0;
      for (int64_t j = 0; j < n_ref; ++j) {
        if (j == self) continue;
        const float v = sims[j];
        if (filled == k && !(v > top[k - 1])) continue;
        int64_t p = filled < k ? filled++ : k - 1;
        while (p > 0 && top[p - 1] < v) {
          top[p] = top[p - 1];
          --p;
        }
        top[p] = v;
      }
      for (int64_t j = 0; j < k; ++j) sum += top[j];
    } else {
      float* s = ws.scratch.data();
      int64_t m = 0;
      for (int64_t j = 0; j < n_ref; ++j) {
        if (j != self) s[m++] = sims[j];
      }
      std::nth_element(s, s + (k - 1), s + m, std::greater<float>());
      std::sort(s, s + k, std::greater<float>());
      for (int64_t j = 0; j < k; ++j) sum += s[j];
    }
    ws.r[i] = sum / k;
  }
}

// random's draw for `task`: the first `take` of `items` after the seeded
// partial shuffle (kRandom's picks, and the random share of the others).
template <typename T>
void random_draw(std::vector<T>& items, int64_t take, uint64_t seed, int32_t task) {
  SplitMix64 rng(stream_seed(seed, task, Stream::kRandom));
  partial_shuffle(items, take, rng);
}

// How many of a task's `quota` picks are drawn at random: share·quota rounded
// to the nearest integer (halves up).
int64_t random_share_of(int64_t quota, double share) {
  return std::min<int64_t>(quota, static_cast<int64_t>(std::floor(share * static_cast<double>(quota) + 0.5)));
}

// Greedy R/D/U selection inside one task, after its random share; appends
// `quota` picks.
bool cancelled(const SampleOptions& options) {
  return options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed);
}

void select_task(const Pool& pool, const Groups& cands, const Groups& measured, int32_t task, int64_t quota,
                 const Weights& w, const SampleOptions& options, Workspace& ws, std::vector<Pick>& picks) {
  const int64_t n = cands.size(task);
  const int64_t dim = pool.dim;
  const int64_t ld = pad_block(n);
  const int64_t* members = cands.order.data() + cands.offset[task];

  // Transposed, normalized, zero-padded embeddings.
  std::fill(ws.xt.begin(), ws.xt.begin() + dim * ld, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    normalize_row(pool.embeddings.data() + members[i] * dim, dim, ws.q.data());
    for (int64_t c = 0; c < dim; ++c) ws.xt[c * ld + i] = ws.q[c];
  }

  const int32_t k = static_cast<int32_t>(std::min<int64_t>(options.knn, n - 1));
  representativeness(ws, n, dim, k, options.seed, task);
  min_max_normalize(ws.r, n);
  for (int64_t i = 0; i < n; ++i) ws.u[i] = pool.uncertainty.empty() ? 0.0 : pool.uncertainty[members[i]];
  min_max_normalize(ws.u, n);
  for (int64_t i = 0; i < n; ++i) {
    ws.base[i] = w.r * ws.r[i] + w.u * ws.u[i];
    ws.tie[i] = tie_hash(options.seed, members[i]);
    ws.alive[i] = 1;
  }

  // Diversity against the measured programs of the task.
  std::fill(ws.dmin.begin(), ws.dmin.begin() + ld, 1.0f);
  const int64_t m = measured.size(task);
  const int64_t* measured_members = measured.order.data() + measured.offset[task];
  for (int64_t j = 0; j < m; ++j) {
    normalize_row(pool.measured_embeddings.data() + measured_members[j] * dim, dim, ws.q.data());
    ws.kernels.update_min_distance(ws.xt.data(), ld, ld, ws.q.data(), dim, ws.dmin.data());
  }
  bool any_selected = m > 0;

  // The random share: the first picks of random's own seeded shuffle of the
  // task (the same draw as kRandom), then the greedy spreads away from them.
  const int64_t random_picks = random_share_of(quota, options.random_share);
  if (random_picks > 0) {
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    ws.locals.resize(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) ws.locals[i] = i;
    random_draw(ws.locals, random_picks, options.seed, task);
    for (int64_t p = 0; p < random_picks; ++p) {
      const int64_t i = ws.locals[p];
      picks.push_back(Pick{members[i], task, kNaN, kNaN, kNaN, kNaN});
      ws.alive[i] = 0;
      for (int64_t c = 0; c < dim; ++c) ws.q[c] = ws.xt[c * ld + i];
      ws.kernels.update_min_distance(ws.xt.data(), ld, ld, ws.q.data(), dim, ws.dmin.data());
    }
    any_selected = true;
  }

  for (int64_t p = random_picks; p < quota; ++p) {
    if (cancelled(options)) return;  // select() reports it
    // D normalized over the remaining candidates (1 for all before any pick).
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    if (any_selected) {
      for (int64_t i = 0; i < n; ++i) {
        if (!ws.alive[i]) continue;
        lo = std::min<double>(lo, ws.dmin[i]);
        hi = std::max<double>(hi, ws.dmin[i]);
      }
    }
    const double range = hi - lo;
    const bool constant = !(range > 0);
    const double inv_range = constant ? 0.0 : 1.0 / range;

    int64_t best = -1;
    double best_score = 0, best_d = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (!ws.alive[i]) continue;
      const double d = constant ? 0.5 : (ws.dmin[i] - lo) * inv_range;
      const double score = ws.base[i] + w.d * d;
      if (best < 0 || score > best_score || (score == best_score && ws.tie[i] > ws.tie[best])) {
        best = i;
        best_score = score;
        best_d = d;
      }
    }
    picks.push_back(Pick{members[best], task, ws.r[best], best_d, ws.u[best], best_score});
    ws.alive[best] = 0;
    any_selected = true;
    if (p + 1 < quota) {
      for (int64_t c = 0; c < dim; ++c) ws.q[c] = ws.xt[c * ld + best];
      ws.kernels.update_min_distance(ws.xt.data(), ld, ld, ws.q.data(), dim, ws.dmin.data());
    }
  }
}

// kUniform: a seeded shuffle of the whole pool, its first budget candidates,
// ordered by task (stable: within a task in shuffle order).
std::vector<Pick> uniform_picks(const Pool& pool, const SampleOptions& options) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::vector<int64_t> items(static_cast<std::size_t>(pool.count));
  for (int64_t i = 0; i < pool.count; ++i) items[i] = i;
  random_draw(items, options.budget, options.seed, -1);
  items.resize(static_cast<std::size_t>(options.budget));
  std::stable_sort(items.begin(), items.end(), [&](int64_t a, int64_t b) { return pool.task[a] < pool.task[b]; });
  std::vector<Pick> picks;
  picks.reserve(items.size());
  for (const int64_t i : items) picks.push_back(Pick{i, pool.task[i], kNaN, kNaN, kNaN, kNaN});
  return picks;
}

}  // namespace

std::string_view strategy_name(Strategy strategy) {
  switch (strategy) {
    case Strategy::kRdu: return "rdu";
    case Strategy::kRandom: return "random";
    case Strategy::kR: return "r";
    case Strategy::kD: return "d";
    case Strategy::kU: return "u";
    case Strategy::kFast: return "fast";
    case Strategy::kUniform: return "uniform";
  }
  return {};
}

bool uses_model(Strategy strategy) { return strategy != Strategy::kRandom && strategy != Strategy::kUniform; }

std::optional<Strategy> parse_strategy(std::string_view name) {
  for (const Strategy s : {Strategy::kRdu, Strategy::kRandom, Strategy::kR, Strategy::kD, Strategy::kU, Strategy::kFast,
                           Strategy::kUniform}) {
    if (strategy_name(s) == name) return s;
  }
  return std::nullopt;
}

Result<std::vector<int64_t>> task_quotas(std::span<const int64_t> task_sizes, int64_t budget, int32_t min_per_task) {
  if (min_per_task < 0) return bad("min_per_task must be >= 0, got " + std::to_string(min_per_task));
  int64_t total = 0;
  for (std::size_t t = 0; t < task_sizes.size(); ++t) {
    if (task_sizes[t] < 0) {
      return bad("task_sizes[" + std::to_string(t) + "] = " + std::to_string(task_sizes[t]) + " is negative");
    }
    total += task_sizes[t];
    if (total > kMaxTotalSize) return bad("task_sizes sum to more than 2^31 candidates");
  }
  if (budget < 1 || budget > total) {
    return bad("budget " + std::to_string(budget) + " must be in [1, total size = " + std::to_string(total) + "]");
  }
  const std::size_t nt = task_sizes.size();
  std::vector<int64_t> quota(nt);
  int64_t base_sum = 0;
  for (std::size_t t = 0; t < nt; ++t) {
    quota[t] = std::min<int64_t>(min_per_task, task_sizes[t]);
    base_sum += quota[t];
  }
  if (budget < base_sum) {
    return bad("budget " + std::to_string(budget) + " is below the per-task minimum: at least " +
               std::to_string(base_sum) + " needed (min(min_per_task = " + std::to_string(min_per_task) +
               ", size) for each of " + std::to_string(nt) + " tasks)");
  }

  // Water-filling: a task whose proportional share reaches its capacity
  // (size − base) is filled and leaves; the others split what remains. Fixing
  // every such task at once is safe: it only raises the others' shares.
  int64_t rest = budget - base_sum;
  std::vector<int32_t> active;
  for (std::size_t t = 0; t < nt; ++t) {
    if (task_sizes[t] > quota[t]) active.push_back(static_cast<int32_t>(t));
  }
  for (;;) {
    int64_t sum = 0;
    for (const int32_t t : active) sum += task_sizes[t];
    if (rest == 0 || active.empty()) break;
    std::vector<int32_t> keep;
    int64_t filled = 0;
    for (const int32_t t : active) {
      const int64_t cap = task_sizes[t] - quota[t];
      if (rest * task_sizes[t] >= cap * sum) {  // share >= cap
        quota[t] += cap;
        filled += cap;
      } else {
        keep.push_back(t);
      }
    }
    if (filled == 0) {
      // Largest remainder: floors, then one more for the largest fractional
      // parts (rest·size mod sum), ties to the lower task index.
      std::vector<std::pair<int64_t, int32_t>> rems;
      int64_t given = 0;
      for (const int32_t t : active) {
        const int64_t share = rest * task_sizes[t] / sum;
        quota[t] += share;
        given += share;
        rems.emplace_back(rest * task_sizes[t] % sum, t);
      }
      std::sort(rems.begin(), rems.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
      });
      for (int64_t j = 0; j < rest - given; ++j) ++quota[rems[j].second];
      break;
    }
    rest -= filled;
    active.swap(keep);
  }
  return quota;
}

Result<std::vector<Pick>> select(const Pool& pool, const SampleOptions& options) {
  if (Status s = validate(pool, options); !s) return s;
  if (options.strategy == Strategy::kUniform) return uniform_picks(pool, options);

  const Groups cands = group_by_task(pool.task, pool.num_tasks);
  std::vector<int64_t> sizes(static_cast<std::size_t>(pool.num_tasks));
  for (int32_t t = 0; t < pool.num_tasks; ++t) sizes[t] = cands.size(t);
  auto quotas = task_quotas(sizes, options.budget, options.min_per_task);
  if (!quotas) return quotas.status();

  std::vector<Pick> picks;
  picks.reserve(static_cast<std::size_t>(options.budget));

  if (options.strategy == Strategy::kRandom) {
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    std::vector<int64_t> items;
    for (int32_t t = 0; t < pool.num_tasks; ++t) {
      const int64_t q = (*quotas)[t];
      if (q == 0) continue;
      items.assign(cands.order.begin() + cands.offset[t], cands.order.begin() + cands.offset[t + 1]);
      random_draw(items, q, options.seed, t);
      for (int64_t p = 0; p < q; ++p) picks.push_back(Pick{items[p], t, kNaN, kNaN, kNaN, kNaN});
    }
    return picks;
  }

  Weights w = options.weights;
  switch (options.strategy) {
    case Strategy::kR: w = {1, 0, 0}; break;
    case Strategy::kD: w = {0, 1, 0}; break;
    case Strategy::kU: w = {0, 0, 1}; break;
    case Strategy::kFast: w = {0, 1, 1}; break;
    case Strategy::kRdu:
    case Strategy::kRandom:
    case Strategy::kUniform: break;
  }
  // kFast: the prediction in U's place, shifted to >= 0 (U is min-max
  // normalized per task, so the shift changes nothing else).
  std::vector<float> shifted;
  Pool with_f = pool;
  if (options.strategy == Strategy::kFast) {
    const float lo = *std::min_element(pool.predicted.begin(), pool.predicted.end());
    shifted.reserve(pool.predicted.size());
    for (const float p : pool.predicted) shifted.push_back(p - lo);
    with_f.uncertainty = shifted;
  }

  const Groups measured = group_by_task(pool.measured_task, pool.num_tasks);
  int64_t max_n = 0;
  for (int32_t t = 0; t < pool.num_tasks; ++t) {
    if ((*quotas)[t] > 0) max_n = std::max(max_n, sizes[t]);
  }
  const auto dim = static_cast<std::size_t>(pool.dim);
  const auto max_ld = static_cast<std::size_t>(pad_block(max_n));
  const auto ref_ld = static_cast<std::size_t>(pad_block(std::min(max_n, kRduMaxReference)));
  const auto nn = static_cast<std::size_t>(max_n);
  Workspace ws;
  ws.xt.resize(dim * max_ld);
  if (max_n > kRduMaxReference) {
    ws.ref_t.resize(dim * ref_ld);
    ws.ref_pos.resize(nn);
  }
  ws.locals.reserve(nn);
  ws.sims.resize(ref_ld);
  ws.scratch.resize(ref_ld);
  ws.q.resize(dim);
  ws.r.resize(nn);
  ws.u.resize(nn);
  ws.base.resize(nn);
  ws.dmin.resize(max_ld);
  ws.tie.resize(nn);
  ws.alive.resize(nn);

  for (int32_t t = 0; t < pool.num_tasks; ++t) {
    if ((*quotas)[t] == 0) continue;
    select_task(with_f, cands, measured, t, (*quotas)[t], w, options, ws, picks);
    if (cancelled(options)) return Status::cancelled("sample selection cancelled at task " + std::to_string(t));
  }
  return picks;
}

}  // namespace tcl::sampler
