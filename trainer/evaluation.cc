#include "trainer/evaluation.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>
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
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return sc[a] != sc[b] ? sc[a] > sc[b] : a < b;
  });
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

}  // namespace

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

RankingMetrics evaluate_ranking(std::span<const std::int64_t> groups, std::span<const double> latencies,
                                std::span<const float> scores) {
  assert(groups.size() == latencies.size() && groups.size() == scores.size());
  RankingMetrics m;
  m.programs = static_cast<std::int64_t>(groups.size());
  m.top1 = topk(groups, latencies, scores, 1);
  m.top5 = topk(groups, latencies, scores, 5);
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

}  // namespace tcl::trainer
