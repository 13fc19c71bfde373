#include "trainer/evaluation.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>
#include <random>
#include <unordered_map>
#include <vector>

namespace tcl::trainer {
namespace {

// Program indices grouped by task, tasks in first-seen order.
std::vector<std::vector<std::size_t>> by_task(std::span<const std::int64_t> groups) {
  std::unordered_map<std::int64_t, std::size_t> index;
  std::vector<std::vector<std::size_t>> tasks;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    auto [it, fresh] = index.emplace(groups[i], tasks.size());
    if (fresh) tasks.emplace_back();
    tasks[it->second].push_back(i);
  }
  return tasks;
}

struct TaskTopK {
  double best = 0, best_topk = 0;
};

TaskTopK task_topk(const std::vector<std::size_t>& idx, std::span<const double> lat, std::span<const float> sc, int k) {
  std::vector<std::size_t> order = idx;
  // Highest score first; ties broken by index so results are deterministic.
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return sc[a] != sc[b] ? sc[a] > sc[b] : a < b; });
  TaskTopK t{lat[idx[0]], lat[order[0]]};
  for (std::size_t i : idx) t.best = std::min(t.best, lat[i]);
  const std::size_t kk = std::min(order.size(), static_cast<std::size_t>(k));
  for (std::size_t j = 0; j < kk; ++j) t.best_topk = std::min(t.best_topk, lat[order[j]]);
  return t;
}

// E[min latency of k programs drawn without replacement] and E[best/min]:
// with latencies sorted ascending l_1..l_n, P(min = l_i) = C(n-i, k-1)/C(n, k).
void random_task_topk(const std::vector<std::size_t>& idx, std::span<const double> lat, int k, double* e_min,
                      double* e_ratio) {
  std::vector<double> l;
  l.reserve(idx.size());
  for (std::size_t i : idx) l.push_back(lat[i]);
  std::sort(l.begin(), l.end());
  const std::size_t n = l.size();
  const std::size_t kk = std::min(n, static_cast<std::size_t>(k));
  // p_i computed in log space: log C(n-i, kk-1) - log C(n, kk), i 1-based.
  auto log_choose = [](double a, double b) { return std::lgamma(a + 1) - std::lgamma(b + 1) - std::lgamma(a - b + 1); };
  const double log_total = log_choose(static_cast<double>(n), static_cast<double>(kk));
  *e_min = 0;
  *e_ratio = 0;
  for (std::size_t i = 1; i + kk - 1 <= n; ++i) {
    const double p = std::exp(log_choose(static_cast<double>(n - i), static_cast<double>(kk - 1)) - log_total);
    *e_min += p * l[i - 1];
    *e_ratio += p * (l[0] / l[i - 1]);
  }
}

// Tuning proxy, per task: which programs are within 5% of the best (as a label), and how many.
std::vector<char> within_best(const std::vector<std::size_t>& idx, std::span<const double> lat, std::int64_t* g) {
  double best = lat[idx[0]];
  for (std::size_t i : idx) best = std::min(best, lat[i]);
  std::vector<char> within(idx.size());
  *g = 0;
  for (std::size_t j = 0; j < idx.size(); ++j) {
    within[j] = best / lat[idx[j]] >= kTuningWithin;
    *g += within[j];
  }
  return within;
}

double expected_random_trials(std::int64_t n, std::int64_t g) {
  return static_cast<double>(n + 1) / static_cast<double>(g + 1);
}

// Trials in the model's order until the first qualifying program. A block of
// m equal scores holding q qualifiers is tried in random order: it adds
// (m+1)/(q+1) when q > 0, else all m.
double model_trials(const std::vector<std::size_t>& idx, const std::vector<char>& within, std::span<const float> sc) {
  std::vector<std::size_t> order(idx.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return sc[idx[a]] > sc[idx[b]]; });
  double before = 0;
  for (std::size_t j = 0; j < order.size();) {
    std::size_t end = j;
    std::int64_t q = 0;
    for (; end < order.size() && sc[idx[order[end]]] == sc[idx[order[j]]]; ++end) q += within[order[end]];
    const auto m = static_cast<std::int64_t>(end - j);
    if (q > 0) return before + expected_random_trials(m, q);
    before += static_cast<double>(m);
    j = end;
  }
  return before;  // not reached: a counted task has a qualifying program
}

// The position of the first of g qualifying programs in a uniform random
// permutation of n, drawn one position at a time (the next one qualifies
// with probability g / programs left).
double sample_random_trials(std::int64_t n, std::int64_t g, std::mt19937_64& rng) {
  std::int64_t t = 1;
  for (std::int64_t left = n; left > g; --left, ++t) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // uniform in [0, 1)
    if (u * static_cast<double>(left) < static_cast<double>(g)) break;
  }
  return static_cast<double>(t);
}

// Sums over tasks of one order's ratios.
struct RatioSums {
  double log_sum = 0, sum = 0;
  std::int64_t better = 0, n = 0;
  void add(double ratio) {
    log_sum += std::log(ratio);
    sum += ratio;
    better += ratio < 1;
    ++n;
  }
  [[nodiscard]] double geomean() const { return n > 0 ? std::exp(log_sum / static_cast<double>(n)) : 0; }
};

// (n, g) of every task the proxy counts, with its program indices.
struct ProxyTask {
  std::vector<std::size_t> idx;
  std::vector<char> within;
  std::int64_t g = 0;
};
std::vector<ProxyTask> proxy_tasks(std::span<const std::int64_t> groups, std::span<const double> lat) {
  std::vector<ProxyTask> out;
  for (auto& idx : by_task(groups)) {
    if (idx.size() < 2) continue;
    ProxyTask t;
    t.within = within_best(idx, lat, &t.g);
    if (t.g == static_cast<std::int64_t>(idx.size())) continue;  // all qualify: no signal
    t.idx = std::move(idx);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

TuningProxy tuning_proxy(std::span<const std::int64_t> groups, std::span<const double> latencies,
                         std::span<const float> scores) {
  assert(groups.size() == latencies.size() && groups.size() == scores.size());
  RatioSums s;
  for (const ProxyTask& t : proxy_tasks(groups, latencies)) {
    const auto n = static_cast<std::int64_t>(t.idx.size());
    s.add(model_trials(t.idx, t.within, scores) / expected_random_trials(n, t.g));
  }
  if (s.n == 0) return {};
  const double tasks = static_cast<double>(s.n);
  return TuningProxy{s.geomean(), static_cast<double>(s.better) / tasks, s.sum / tasks, 0, s.n};
}

TuningProxy random_tuning_proxy(std::span<const std::int64_t> groups, std::span<const double> latencies, int draws,
                                std::uint64_t seed) {
  assert(groups.size() == latencies.size());
  const std::vector<ProxyTask> tasks = proxy_tasks(groups, latencies);
  if (tasks.empty() || draws < 1) return {};
  std::mt19937_64 rng(seed);
  RatioSums all;
  std::vector<double> geomeans;  // one per draw
  for (int d = 0; d < draws; ++d) {
    RatioSums s;
    for (const ProxyTask& t : tasks) {
      const auto n = static_cast<std::int64_t>(t.idx.size());
      const double ratio = sample_random_trials(n, t.g, rng) / expected_random_trials(n, t.g);
      s.add(ratio);
      all.add(ratio);
    }
    geomeans.push_back(s.geomean());
  }
  double mean = 0, var = 0;
  for (double x : geomeans) mean += x;
  mean /= static_cast<double>(draws);
  for (double x : geomeans) var += (x - mean) * (x - mean);
  const double count = static_cast<double>(all.n);
  return TuningProxy{all.geomean(), static_cast<double>(all.better) / count, all.sum / count,
                     draws > 1 ? std::sqrt(var / static_cast<double>(draws - 1)) : 0.0,
                     static_cast<std::int64_t>(tasks.size())};
}

TopK topk(std::span<const std::int64_t> groups, std::span<const double> latencies, std::span<const float> scores,
          int k) {
  assert(groups.size() == latencies.size() && groups.size() == scores.size());
  double sum_best = 0, sum_topk = 0, sum_ratio = 0;
  std::int64_t n = 0;
  for (const auto& idx : by_task(groups)) {
    if (idx.size() < 2) continue;
    const TaskTopK t = task_topk(idx, latencies, scores, k);
    sum_best += t.best;
    sum_topk += t.best_topk;
    sum_ratio += t.best / t.best_topk;
    ++n;
  }
  if (n == 0) return {};
  return TopK{sum_best / sum_topk, sum_ratio / static_cast<double>(n)};
}

std::vector<TaskRanking> per_task_ranking(std::span<const std::int64_t> groups, std::span<const double> latencies,
                                          std::span<const float> scores) {
  assert(groups.size() == latencies.size() && groups.size() == scores.size());
  std::vector<TaskRanking> out;
  for (const auto& idx : by_task(groups)) {
    if (idx.size() < 2) continue;
    const TaskTopK t = task_topk(idx, latencies, scores, 1);
    TaskRanking r{groups[idx[0]], t.best, t.best_topk, 0};
    std::int64_t g = 0;
    const std::vector<char> within = within_best(idx, latencies, &g);
    if (g < static_cast<std::int64_t>(idx.size())) {
      r.tuning_ratio =
          model_trials(idx, within, scores) / expected_random_trials(static_cast<std::int64_t>(idx.size()), g);
    }
    out.push_back(r);
  }
  return out;
}

std::vector<std::int64_t> set_groups(std::span<const std::int64_t> groups) {
  std::unordered_map<std::int64_t, std::int64_t> n, seen;
  for (std::int64_t g : groups) ++n[g];
  std::vector<std::int64_t> out(groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i) {
    assert(groups[i] >= 0);
    const std::int64_t k = std::clamp<std::int64_t>(n[groups[i]] / kProgramsPerSet, 1, kMaxSets);
    out[i] = groups[i] * kMaxSets + seen[groups[i]]++ % k;
  }
  return out;
}

std::vector<TaskInSets> per_task_in_sets(std::span<const std::int64_t> groups, std::span<const double> latencies,
                                         std::span<const float> scores) {
  struct Sums {
    std::int64_t sets = 0, counted = 0;  // counted: sets whose tuning ratio counts
    double log_tuning = 0;
  };
  std::vector<TaskInSets> out;
  std::vector<Sums> sums;
  std::unordered_map<std::int64_t, std::size_t> index;  // task → its place in out
  for (const TaskRanking& set : per_task_ranking(set_groups(groups), latencies, scores)) {
    const auto [it, added] = index.try_emplace(set.group / kMaxSets, out.size());
    if (added) {
      out.push_back(TaskInSets{.group = set.group / kMaxSets});
      sums.emplace_back();
    }
    TaskInSets& t = out[it->second];
    Sums& s = sums[it->second];
    t.top1 += set.top1();
    t.best += set.best;
    t.best_top1 += set.best_top1;
    ++s.sets;
    if (set.tuning_ratio > 0) {
      s.log_tuning += std::log(set.tuning_ratio);
      ++s.counted;
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].top1 /= static_cast<double>(sums[i].sets);
    if (sums[i].counted > 0) out[i].tuning_ratio = std::exp(sums[i].log_tuning / static_cast<double>(sums[i].counted));
  }
  return out;
}

TopK top1_in_sets(std::span<const std::int64_t> groups, std::span<const double> latencies,
                  std::span<const float> scores) {
  const std::vector<TaskInSets> tasks = per_task_in_sets(groups, latencies, scores);
  if (tasks.empty()) return {};
  double sum_best = 0, sum_top1 = 0, mean = 0;
  for (const TaskInSets& t : tasks) {
    sum_best += t.best;
    sum_top1 += t.best_top1;
    mean += t.top1;
  }
  return TopK{sum_best / sum_top1, mean / static_cast<double>(tasks.size())};
}

RankingMetrics evaluate_ranking(std::span<const std::int64_t> groups, std::span<const double> latencies,
                                std::span<const float> scores) {
  assert(groups.size() == latencies.size() && groups.size() == scores.size());
  RankingMetrics m;
  m.programs = static_cast<std::int64_t>(groups.size());
  m.top1 = topk(groups, latencies, scores, 1);
  m.top5 = topk(groups, latencies, scores, 5);
  m.top1_in_sets = top1_in_sets(groups, latencies, scores);
  m.tuning = tuning_proxy(groups, latencies, scores);
  m.random_tuning = random_tuning_proxy(groups, latencies);
  double rnd_best = 0, rnd_min1 = 0, rnd_min5 = 0, rnd_ratio1 = 0, rnd_ratio5 = 0;
  double pairs = 0, right = 0;
  for (const auto& idx : by_task(groups)) {
    if (idx.size() < 2) {
      ++m.tasks_skipped;
      continue;
    }
    ++m.tasks;
    double e_min = 0, e_ratio = 0, best = latencies[idx[0]];
    for (std::size_t i : idx) best = std::min(best, latencies[i]);
    rnd_best += best;
    random_task_topk(idx, latencies, 1, &e_min, &e_ratio);
    rnd_min1 += e_min;
    rnd_ratio1 += e_ratio;
    random_task_topk(idx, latencies, 5, &e_min, &e_ratio);
    rnd_min5 += e_min;
    rnd_ratio5 += e_ratio;
    for (std::size_t a = 0; a < idx.size(); ++a) {
      for (std::size_t b = a + 1; b < idx.size(); ++b) {
        const double la = latencies[idx[a]], lb = latencies[idx[b]];
        if (la == lb) continue;
        const float sa = scores[idx[a]], sb = scores[idx[b]];
        pairs += 1;
        if (sa == sb) {
          right += 0.5;
        } else if ((la < lb) == (sa > sb)) {
          right += 1;
        }
      }
    }
  }
  if (m.tasks > 0) {
    const double t = static_cast<double>(m.tasks);
    m.random_top1 = TopK{rnd_best / rnd_min1, rnd_ratio1 / t};
    m.random_top5 = TopK{rnd_best / rnd_min5, rnd_ratio5 / t};
  }
  m.pairwise_accuracy = pairs > 0 ? right / pairs : 0;
  return m;
}

std::vector<float> ensemble_scores(std::span<const std::int64_t> groups, std::span<const std::vector<float>> members) {
  assert(!members.empty());
  const std::vector<std::vector<std::size_t>> tasks = by_task(groups);
  std::vector<double> sum(groups.size(), 0.0);
  for (const std::vector<float>& scores : members) {
    assert(scores.size() == groups.size());
    for (const std::vector<std::size_t>& idx : tasks) {
      double mean = 0, var = 0;
      for (std::size_t i : idx) mean += scores[i];
      mean /= static_cast<double>(idx.size());
      for (std::size_t i : idx) var += (scores[i] - mean) * (scores[i] - mean);
      const double sd = std::sqrt(var / static_cast<double>(idx.size()));
      if (sd == 0) continue;
      for (std::size_t i : idx) sum[i] += (scores[i] - mean) / sd;
    }
  }
  std::vector<float> out(groups.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<float>(sum[i] / static_cast<double>(members.size()));
  return out;
}

}  // namespace tcl::trainer
