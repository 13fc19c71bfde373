// bench_sampler — seconds for sampler::select() to pick a fraction of a
// synthetic pool, one thread, for every strategy and three task layouts:
//   uniform  all tasks the same size (count / tasks);
//   skewed   four tasks of 5k–8k candidates, the rest log-uniform 20..1000;
//   one-big  one task holds half the pool, the rest uniform.
// Embeddings are clustered (4–12 Gaussian clusters per task around random
// unit centres, then noise), seeded; uncertainty is uniform in [0, 1).
//
//   bench_sampler [--count N] [--dim D] [--tasks T] [--fraction F]
//                 [--measured M] [--layout uniform|skewed|one-big|all]
//                 [--strategy NAME|all] [--seed S]
//
// --measured M adds M already-measured programs spread over the tasks in
// proportion to their sizes. The DESIGN §6 target: 10% of 100k (dim 64,
// ~400 tasks) in at most 10 s.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/lib/flags.h"
#include "sampler/rdu.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace sampler = tcl::sampler;

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double normal() {  // Box–Muller
    const double u1 = std::max(uniform(), 1e-300), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

// Sizes summing to `count` over `tasks` tasks.
std::vector<int64_t> make_sizes(const std::string& layout, int64_t count, int32_t tasks, Rng& rng) {
  std::vector<int64_t> sizes(static_cast<std::size_t>(tasks), 0);
  std::vector<int64_t> fixed;
  if (layout == "skewed") fixed = {5000, 6000, 7000, 8000};
  if (layout == "one-big") fixed = {count / 2};
  int64_t left = count;
  for (std::size_t t = 0; t < fixed.size() && t < sizes.size(); ++t) {
    sizes[t] = std::min(fixed[t], left);
    left -= sizes[t];
  }
  const auto first = static_cast<int32_t>(std::min<std::size_t>(fixed.size(), sizes.size()));
  std::vector<double> raw(static_cast<std::size_t>(tasks), 0.0);
  double raw_sum = 0;
  for (int32_t t = first; t < tasks; ++t) {
    raw[t] = layout == "skewed" ? std::exp(std::log(20.0) + rng.uniform() * (std::log(1000.0) - std::log(20.0))) : 1.0;
    raw_sum += raw[t];
  }
  int64_t given = 0;
  for (int32_t t = first; t < tasks; ++t) {
    sizes[t] = static_cast<int64_t>(std::floor(static_cast<double>(left) * raw[t] / raw_sum));
    given += sizes[t];
  }
  for (int32_t t = first; given < left; t = t + 1 < tasks ? t + 1 : first, ++given) ++sizes[t];
  return sizes;
}

struct Synthetic {
  std::vector<float> embeddings, uncertainty, measured_embeddings;
  std::vector<int32_t> task, measured_task;
};

// Rows for task t: clustered around a few random unit centres.
void add_rows(int32_t t, int64_t rows, int64_t dim, Rng& rng, std::vector<float>& out, std::vector<int32_t>& task,
              std::vector<std::vector<float>>& centres) {
  for (int64_t i = 0; i < rows; ++i) {
    const auto& c = centres[static_cast<std::size_t>(rng.next() % centres.size())];
    for (int64_t j = 0; j < dim; ++j) out.push_back(static_cast<float>(c[j] + 0.35 * rng.normal() / std::sqrt(dim)));
    task.push_back(t);
  }
}

Synthetic make_pool(const std::vector<int64_t>& sizes, int64_t dim, int64_t measured, uint64_t seed) {
  Rng rng(seed);
  Synthetic s;
  int64_t total = 0;
  for (const int64_t n : sizes) total += n;
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    std::vector<std::vector<float>> centres(4 + rng.next() % 9, std::vector<float>(dim));
    for (auto& c : centres) {
      double ss = 0;
      for (auto& v : c) {
        v = static_cast<float>(rng.normal());
        ss += double{v} * v;
      }
      for (auto& v : c) v = static_cast<float>(v / std::sqrt(ss));
    }
    add_rows(static_cast<int32_t>(t), sizes[t], dim, rng, s.embeddings, s.task, centres);
    const int64_t m = total > 0 ? measured * sizes[t] / total : 0;
    add_rows(static_cast<int32_t>(t), m, dim, rng, s.measured_embeddings, s.measured_task, centres);
  }
  // Interleave tasks in the pool (as a registry query would return them):
  // shuffle the rows by a seeded permutation.
  const auto n = static_cast<int64_t>(s.task.size());
  std::vector<int64_t> perm(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  for (int64_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.next() % static_cast<uint64_t>(i + 1)]);
  std::vector<float> emb(s.embeddings.size());
  std::vector<int32_t> task(s.task.size());
  for (int64_t i = 0; i < n; ++i) {
    std::copy_n(s.embeddings.begin() + perm[i] * dim, dim, emb.begin() + i * dim);
    task[i] = s.task[perm[i]];
  }
  s.embeddings.swap(emb);
  s.task.swap(task);
  s.uncertainty.resize(static_cast<std::size_t>(n));
  for (auto& u : s.uncertainty) u = static_cast<float>(rng.uniform());
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t count = 100000, dim = 64, measured = 0;
  int32_t tasks = 400;
  double fraction = 0.1;
  uint64_t seed = 1;
  std::string layout_arg = "all", strategy_arg = "all";
  tcl::bench::Flags flags;
  flags.value("count", &count)
      .value("dim", &dim)
      .value("tasks", &tasks)
      .value("fraction", &fraction)
      .value("measured", &measured)
      .custom("layout",
              [&layout_arg](const std::string& v) {
                if (v != "all" && v != "uniform" && v != "skewed" && v != "one-big") {
                  std::fprintf(stderr, "--layout takes uniform, skewed, one-big or all, not '%s'\n", v.c_str());
                  return false;
                }
                layout_arg = v;
                return true;
              })
      .value("strategy", &strategy_arg)
      .value("seed", &seed);
  if (!flags.parse(argc, argv)) return 2;
  std::vector<std::string> layouts = {"uniform", "skewed", "one-big"};
  if (layout_arg != "all") layouts = {layout_arg};
  std::vector<sampler::Strategy> strategies = {sampler::Strategy::kRdu, sampler::Strategy::kRandom,
                                               sampler::Strategy::kR, sampler::Strategy::kD, sampler::Strategy::kU};
  if (strategy_arg != "all") {
    const auto s = sampler::parse_strategy(strategy_arg);
    if (!s) {
      std::fprintf(stderr, "--strategy: unknown strategy %s\n", strategy_arg.c_str());
      return 2;
    }
    strategies = {*s};
  }
  const auto budget = static_cast<int64_t>(std::llround(fraction * static_cast<double>(count)));
  std::printf("count %lld, dim %lld, tasks %d, budget %lld, measured %lld, one thread\n", static_cast<long long>(count),
              static_cast<long long>(dim), tasks, static_cast<long long>(budget), static_cast<long long>(measured));
  std::printf("%-8s %-7s %9s %8s %8s %12s\n", "layout", "strategy", "seconds", "largest", "picks", "checksum");

  for (const std::string& layout : layouts) {
    Rng rng(seed);
    const std::vector<int64_t> sizes = make_sizes(layout, count, tasks, rng);
    const Synthetic s = make_pool(sizes, dim, measured, seed + 1);
    sampler::Pool pool;
    pool.count = count;
    pool.dim = dim;
    pool.embeddings = s.embeddings;
    pool.uncertainty = s.uncertainty;
    pool.task = s.task;
    pool.num_tasks = tasks;
    pool.measured_count = static_cast<int64_t>(s.measured_task.size());
    pool.measured_embeddings = s.measured_embeddings;
    pool.measured_task = s.measured_task;
    const int64_t largest = *std::max_element(sizes.begin(), sizes.end());
    for (const sampler::Strategy strategy : strategies) {
      sampler::SampleOptions options;
      options.budget = budget;
      options.strategy = strategy;
      options.seed = seed;
      const auto t0 = Clock::now();
      auto picks = sampler::select(pool, options);
      const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      if (!picks) {
        std::fprintf(stderr, "%s\n", picks.status().to_string().c_str());
        return 1;
      }
      uint64_t checksum = 0;
      for (const auto& p : *picks) checksum = checksum * 1000003u + static_cast<uint64_t>(p.index);
      std::printf("%-8s %-7s %9.3f %8lld %8zu %12llx\n", layout.c_str(),
                  std::string(sampler::strategy_name(strategy)).c_str(), seconds, static_cast<long long>(largest),
                  picks->size(), static_cast<unsigned long long>(checksum & 0xffffffffffffULL));
      std::fflush(stdout);
    }
  }
  return 0;
}
