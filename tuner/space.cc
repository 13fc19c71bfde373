#include "tuner/space.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <span>
#include <utility>

#include "measure/steps.h"

namespace tcl::tuner {
namespace {

using measure::GpuSchedule;
using measure::OpKind;
using measure::Schedule;

constexpr int kCpuUnroll[] = {0, 16, 64, 512};        // measure/schedule.cc's choices
constexpr int kGpuUnroll[] = {0, 16, 64, 512, 1024};  // measure/schedule_gpu.cc's choices
constexpr int kParallelLevels[] = {0, 1, 2};
constexpr std::int64_t kMaxInnermost = 64;  // Ansor's max_innermost_split_factor
constexpr int kMutationAttempts = 16;

float log2f1(double x) { return static_cast<float>(std::log2(1.0 + std::max(0.0, x))); }

std::int64_t smallest_prime_factor(std::int64_t n) {
  for (std::int64_t p = 2; p * p <= n; ++p) {
    if (n % p == 0) return p;
  }
  return n;
}

// A random prime factor of n > 1 (from its factorization, uniformly over the factors with multiplicity).
std::int64_t random_prime_factor(std::int64_t n, core::SplitMix64& rng) {
  std::vector<std::int64_t> primes;
  while (n > 1) {
    const std::int64_t p = smallest_prime_factor(n);
    primes.push_back(p);
    n /= p;
  }
  return primes[rng.below(primes.size())];
}

// Moves one prime factor between two levels of one split loop. `levels`
// holds every level's length, level 0 included (their product is the
// extent); `max_innermost` bounds the last level. False when the source
// level is 1.
bool move_factor(std::vector<std::int64_t>& levels, std::int64_t max_innermost, core::SplitMix64& rng) {
  const std::size_t n = levels.size();
  const std::size_t from = rng.below(n);
  std::size_t to = rng.below(n - 1);
  if (to >= from) ++to;
  if (levels[from] <= 1) return false;
  const std::int64_t p = random_prime_factor(levels[from], rng);
  levels[from] /= p;
  levels[to] *= p;
  return levels[n - 1] <= max_innermost;
}

template <typename T>
T other_choice(std::span<const T> choices, T current, core::SplitMix64& rng) {
  std::vector<T> rest;
  for (T c : choices) {
    if (c != current) rest.push_back(c);
  }
  return rest[rng.below(rest.size())];
}

void swap_two(std::vector<int>& order, core::SplitMix64& rng) {
  if (order.size() < 2) return;
  const std::size_t a = rng.below(order.size());
  std::size_t b = rng.below(order.size() - 1);
  if (b >= a) ++b;
  std::swap(order[a], order[b]);
}

// CPU tile lengths with level 0 (the rest) made explicit: [rest, l1, l2, l3].
std::vector<std::int64_t> with_rest(std::int64_t extent, const std::vector<std::int64_t>& tiles) {
  std::int64_t inner = 1;
  for (std::int64_t t : tiles) inner *= t;
  std::vector<std::int64_t> out{extent / inner};
  out.insert(out.end(), tiles.begin(), tiles.end());
  return out;
}

Schedule mutate_softmax(const measure::Workload& w, Schedule s, core::SplitMix64& rng) {
  switch (rng.below(6)) {
    case 0: s.inline_exp = !s.inline_exp; break;
    case 1: s.reduce_at_row = !s.reduce_at_row; break;
    case 2: s.parallel = !s.parallel; break;
    case 3: s.vectorize = !s.vectorize; break;
    case 4: s.auto_unroll_max_step = other_choice<int>(kCpuUnroll, s.auto_unroll_max_step, rng); break;
    default: s.vector_split = measure::steps::pick(measure::steps::divisors(w.args[1], kMaxInnermost), rng); break;
  }
  return s;
}

Schedule mutate_cpu(const measure::Workload& w, Schedule s, core::SplitMix64& rng) {
  if (w.kind == OpKind::kSoftmax) return mutate_softmax(w, std::move(s), rng);
  const measure::LoopExtents ext = measure::loop_extents(w);
  const bool conv = w.kind == OpKind::kConv2d || w.kind == OpKind::kDepthwiseConv2d;
  switch (rng.below(8)) {
    case 0:
    case 1: {  // tile sizes: half of all mutations, as in Ansor
      if (rng.below(4) == 0 && !ext.reduce.empty()) {
        const std::size_t r = rng.below(ext.reduce.size());
        std::vector<std::int64_t> levels{ext.reduce[r] / s.reduce_tiles[r], s.reduce_tiles[r]};
        if (move_factor(levels, kMaxInnermost, rng)) s.reduce_tiles[r] = levels[1];
      } else {
        const std::size_t d = rng.below(ext.spatial.size());
        std::vector<std::int64_t> levels = with_rest(ext.spatial[d], s.spatial_tiles[d]);
        if (move_factor(levels, kMaxInnermost, rng)) s.spatial_tiles[d].assign(levels.begin() + 1, levels.end());
      }
      break;
    }
    case 2: s.auto_unroll_max_step = other_choice<int>(kCpuUnroll, s.auto_unroll_max_step, rng); break;
    case 3: s.parallel_levels = other_choice<int>(kParallelLevels, s.parallel_levels, rng); break;
    case 4: s.vectorize = !s.vectorize; break;
    case 5:
      if (conv && rng.below(2) == 0) {
        s.inline_pad = !s.inline_pad;
      } else {
        s.cache_write = !s.cache_write;
      }
      break;
    case 6: swap_two(s.spatial_order, rng); break;
    default: swap_two(s.reduce_order, rng); break;
  }
  return s;
}

// Keeps each fetch vector a divisor of its shared array (a tile mutation may change the array).
void repair_fetch(const measure::Workload& w, GpuSchedule& s) {
  const measure::GpuShape g = measure::gpu_shape(w, s);
  for (int i = 0; i < 2; ++i) {
    std::int64_t& v = s.fetch_vector[static_cast<std::size_t>(i)];
    while (v > 1 && g.shared_floats[i] % v != 0) v /= 2;
  }
}

GpuSchedule mutate_gpu(const measure::Workload& w, GpuSchedule s, const measure::GpuLimits& limits,
                       core::SplitMix64& rng) {
  const measure::LoopExtents ext = measure::loop_extents(w);
  const std::uint64_t kind = rng.below(8);
  if (kind < 5) {  // tile sizes
    if (kind == 4 && !ext.reduce.empty()) {
      const std::size_t r = rng.below(ext.reduce.size());
      std::vector<std::int64_t> levels = with_rest(ext.reduce[r], s.reduce_tiles[r]);
      if (move_factor(levels, limits.max_innermost_split_factor, rng))
        s.reduce_tiles[r].assign(levels.begin() + 1, levels.end());
    } else {
      const std::size_t d = rng.below(ext.spatial.size());
      std::vector<std::int64_t> levels = with_rest(ext.spatial[d], s.spatial_tiles[d]);
      if (move_factor(levels, limits.max_innermost_split_factor, rng))
        s.spatial_tiles[d].assign(levels.begin() + 1, levels.end());
    }
    repair_fetch(w, s);
  } else if (kind < 7) {
    s.auto_unroll_max_step = other_choice<int>(kGpuUnroll, s.auto_unroll_max_step, rng);
  } else {
    const std::size_t i = rng.below(2);
    const measure::GpuShape g = measure::gpu_shape(w, s);
    std::vector<std::int64_t> ok;
    for (std::int64_t v : {1, 2, 4}) {
      if (g.shared_floats[i] % v == 0 && v != s.fetch_vector[i]) ok.push_back(v);
    }
    if (!ok.empty()) s.fetch_vector[i] = ok[rng.below(ok.size())];
  }
  return s;
}

void cpu_features(const measure::Workload& w, const Schedule& s, std::vector<float>* f) {
  f->push_back(s.vectorize ? 1.f : 0.f);
  f->push_back(log2f1(s.auto_unroll_max_step));
  if (w.kind == OpKind::kSoftmax) {
    f->insert(f->end(), {s.inline_exp ? 1.f : 0.f, s.reduce_at_row ? 1.f : 0.f, s.parallel ? 1.f : 0.f,
                         log2f1(static_cast<double>(s.vector_split))});
    return;
  }
  const measure::LoopExtents ext = measure::loop_extents(w);
  f->insert(f->end(), {s.cache_write ? 1.f : 0.f, static_cast<float>(s.parallel_levels), s.inline_pad ? 1.f : 0.f});
  double parallel = 1, local = 1;
  for (std::size_t d = 0; d < ext.spatial.size(); ++d) {
    const auto levels = with_rest(ext.spatial[d], s.spatial_tiles[d]);
    for (std::int64_t l : levels) f->push_back(log2f1(static_cast<double>(l)));
    for (int level = 0; level < s.parallel_levels; ++level) parallel *= static_cast<double>(levels[level]);
    local *= static_cast<double>(levels[2] * levels[3]);
  }
  for (std::size_t r = 0; r < ext.reduce.size(); ++r) {
    const std::int64_t outer = ext.reduce[r] / s.reduce_tiles[r];  // exact: the split divides the extent
    f->push_back(log2f1(static_cast<double>(outer)));
    f->push_back(log2f1(static_cast<double>(s.reduce_tiles[r])));
  }
  for (std::size_t i = 0; i < s.spatial_order.size(); ++i) {
    f->push_back(static_cast<float>(std::find(s.spatial_order.begin(), s.spatial_order.end(), static_cast<int>(i)) -
                                    s.spatial_order.begin()));
  }
  for (std::size_t i = 0; i < s.reduce_order.size(); ++i) {
    f->push_back(static_cast<float>(std::find(s.reduce_order.begin(), s.reduce_order.end(), static_cast<int>(i)) -
                                    s.reduce_order.begin()));
  }
  const std::size_t innermost = static_cast<std::size_t>(s.spatial_order.back());
  f->insert(f->end(), {log2f1(parallel), log2f1(local), log2f1(static_cast<double>(s.spatial_tiles[innermost][2]))});
}

void gpu_features(const measure::Workload& w, const GpuSchedule& s, std::vector<float>* f) {
  const measure::LoopExtents ext = measure::loop_extents(w);
  f->push_back(log2f1(s.auto_unroll_max_step));
  for (std::size_t d = 0; d < ext.spatial.size(); ++d) {
    for (std::int64_t l : with_rest(ext.spatial[d], s.spatial_tiles[d])) f->push_back(log2f1(static_cast<double>(l)));
  }
  for (std::size_t r = 0; r < ext.reduce.size(); ++r) {
    for (std::int64_t l : with_rest(ext.reduce[r], s.reduce_tiles[r])) f->push_back(log2f1(static_cast<double>(l)));
  }
  for (std::int64_t v : s.fetch_vector) f->push_back(log2f1(static_cast<double>(v)));
  const measure::GpuShape g = measure::gpu_shape(w, s);
  f->insert(f->end(),
            {log2f1(static_cast<double>(g.blocks)), log2f1(static_cast<double>(g.threads)),
             log2f1(static_cast<double>(g.vthreads)), log2f1(static_cast<double>(g.local_floats)),
             log2f1(static_cast<double>(g.shared_floats[0] + g.shared_floats[1])), g.threads % 32 == 0 ? 1.f : 0.f});
}

}  // namespace

Space::Space(measure::Workload w, measure::HardwareInfo hw, bool gpu)
    : workload_(std::move(w)), hw_(std::move(hw)), gpu_(gpu) {
  if (gpu_) limits_ = measure::gpu_limits(hw_.params);
  key_ = measure::encode_workload_key(workload_);
}

Result<Space> Space::create(const measure::Workload& workload, const measure::HardwareInfo& hw) {
  const bool gpu = hw.is_cuda();
  if (gpu && !measure::gpu_supported(workload))
    return Status::invalid_argument("the GPU sketch does not cover " + measure::encode_workload_key(workload));
  return Space(workload, hw, gpu);
}

Point Space::sample(core::SplitMix64& rng) const {
  if (gpu_) return measure::sample_gpu_schedule(workload_, limits_, rng);
  return measure::sample_schedule(workload_, hw_.vector_lanes(), rng);
}

Status Space::validate(const Point& p) const {
  if (gpu_) return measure::validate_gpu(workload_, std::get<GpuSchedule>(p), limits_);
  return measure::validate(workload_, std::get<Schedule>(p));
}

std::optional<Point> Space::mutate(const Point& p, core::SplitMix64& rng) const {
  for (int attempt = 0; attempt < kMutationAttempts; ++attempt) {
    Point q = gpu_ ? Point(mutate_gpu(workload_, std::get<GpuSchedule>(p), limits_, rng))
                   : Point(mutate_cpu(workload_, std::get<Schedule>(p), rng));
    if (q != p && validate(q)) return q;
  }
  return std::nullopt;
}

std::vector<core::Step> Space::steps(const Point& p) const {
  if (gpu_) return measure::to_gpu_steps(workload_, std::get<GpuSchedule>(p));
  return measure::to_steps(workload_, std::get<Schedule>(p));
}

core::Record Space::record(const Point& p) const {
  core::Record r;
  r.workload_key = key_;
  r.target = hw_.target;
  r.hardware_params = hw_.params;
  r.steps = steps(p);
  r.costs = {0.0};
  r.timestamp = static_cast<double>(std::time(nullptr));
  r.version = std::string(core::kRecordVersion);
  return r;
}

Result<Point> Space::decode(const std::vector<core::Step>& steps) const {
  if (gpu_) {
    auto s = measure::gpu_from_steps(workload_, steps, limits_);
    if (!s) return s.status();
    return Point(*s);
  }
  auto s = measure::from_steps(workload_, steps);
  if (!s) return s.status();
  return Point(*s);
}

std::string Space::key(const Point& p) const {
  std::string text;
  core::write_steps(steps(p), &text);
  return text;
}

std::vector<float> Space::features(const Point& p) const {
  std::vector<float> f;
  if (gpu_) {
    gpu_features(workload_, std::get<GpuSchedule>(p), &f);
  } else {
    cpu_features(workload_, std::get<Schedule>(p), &f);
  }
  return f;
}

}  // namespace tcl::tuner
