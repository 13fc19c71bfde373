#include "onboarding/promotion_gate.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <utility>

namespace tcl::onboarding {
namespace {

// printf into a std::string (reason lines).
[[gnu::format(printf, 1, 2)]] std::string format(const char* fmt, ...) {
  char line[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(line, sizeof line, fmt, args);
  va_end(args);
  return line;
}

// The standard error of the mean of `x` (0 for fewer than 2 values).
double se_of_mean(const std::vector<double>& x) {
  const auto n = static_cast<double>(x.size());
  if (x.size() < 2) return 0;
  double mean = 0, ss = 0;
  for (double v : x) mean += v;
  mean /= n;
  for (double v : x) ss += (v - mean) * (v - mean);
  return std::sqrt(ss / (n - 1) / n);
}

// What was measured on one platform, for its reason line.
std::string measured(const PlatformComparison& p) {
  const ModelSummary &t = *p.teacher, &s = *p.student;
  std::string out = format(
      "%s%s: %lld tasks (%s); top-1 mean %.4f -> %.4f (%+.4f ± %.4f se), sum %.4f -> %.4f "
      "(%+.4f ± %.4f se)",
      p.platform.c_str(), p.is_new ? " (new)" : "", static_cast<long long>(p.tasks), p.judged_on.c_str(), t.top1_mean,
      s.top1_mean, s.top1_mean - t.top1_mean, p.top1_mean_se, t.top1_sum, s.top1_sum, s.top1_sum - t.top1_sum,
      p.top1_sum_se);
  if (t.tuning && s.tuning) {
    out += format(", tuning proxy %.3f -> %.3f (%+.1f%% ± %.1f%% se, %lld tasks)", *t.tuning, *s.tuning,
                  100 * (*s.tuning / *t.tuning - 1), 100 * p.tuning_log_se, static_cast<long long>(p.tuning_tasks));
  } else {
    out += ", tuning proxy: no task counted, not judged";
  }
  return out;
}

// An old platform: the losses beyond the margins, empty when none.
std::vector<std::string> losses(const PlatformComparison& p, double margin, double tuning_margin) {
  const ModelSummary &t = *p.teacher, &s = *p.student;
  std::vector<std::string> out;
  if (s.top1_mean < t.top1_mean - margin) out.push_back(format("top-1 mean fell %.4f", t.top1_mean - s.top1_mean));
  // The sum: beyond the margin and beyond its noise (promotion_gate.h).
  if (s.top1_sum < t.top1_sum - std::max(margin, 2 * p.top1_sum_se)) {
    out.push_back(format("top-1 sum fell %.4f, over 2 se", t.top1_sum - s.top1_sum));
  }
  if (t.tuning && s.tuning && *s.tuning > *t.tuning * (1 + tuning_margin)) {
    out.push_back(format("tuning proxy rose %.1f%%", 100 * (*s.tuning / *t.tuning - 1)));
  }
  return out;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

}  // namespace

PlatformComparison paired_comparison(std::string platform, bool is_new, std::string judged_on,
                                     std::span<const TaskPair> tasks) {
  PlatformComparison c;
  c.platform = std::move(platform);
  c.is_new = is_new;
  c.judged_on = std::move(judged_on);
  c.tasks = static_cast<std::int64_t>(tasks.size());
  if (tasks.empty()) return c;
  ModelSummary t, s;
  double best = 0, t_top1 = 0, s_top1 = 0, t_log = 0, s_log = 0;
  std::vector<double> mean_diff, log_diff;
  for (const TaskPair& p : tasks) {
    t.top1_mean += p.teacher.top1;
    s.top1_mean += p.student.top1;
    mean_diff.push_back(p.student.top1 - p.teacher.top1);
    best += p.teacher.best;
    t_top1 += p.teacher.best_top1;
    s_top1 += p.student.best_top1;
    if (p.teacher.tuning_ratio > 0 && p.student.tuning_ratio > 0) {
      t_log += std::log(p.teacher.tuning_ratio);
      s_log += std::log(p.student.tuning_ratio);
      log_diff.push_back(std::log(p.student.tuning_ratio) - std::log(p.teacher.tuning_ratio));
    }
  }
  const auto n = static_cast<double>(tasks.size());
  t.top1_mean /= n;
  s.top1_mean /= n;
  t.top1_sum = best / t_top1;
  s.top1_sum = best / s_top1;
  c.tuning_tasks = static_cast<std::int64_t>(log_diff.size());
  if (!log_diff.empty()) {
    const auto m = static_cast<double>(log_diff.size());
    t.tuning = std::exp(t_log / m);
    s.tuning = std::exp(s_log / m);
  }
  c.top1_mean_se = se_of_mean(mean_diff);
  c.tuning_log_se = se_of_mean(log_diff);
  // The sum ratios as ratio estimators: each task's linearised share of
  // the difference, z_i = (b_i - R_s s_i)/S_s - (b_i - R_t t_i)/S_t (Σ z_i = 0).
  if (tasks.size() > 1) {
    double zz = 0;
    for (const TaskPair& p : tasks) {
      const double z = (p.teacher.best - s.top1_sum * p.student.best_top1) / s_top1 -
                       (p.teacher.best - t.top1_sum * p.teacher.best_top1) / t_top1;
      zz += z * z;
    }
    c.top1_sum_se = std::sqrt(zz * n / (n - 1));
  }
  c.teacher = t;
  c.student = s;
  return c;
}

GateDecision promotion_decision(const std::vector<PlatformComparison>& platforms, double margin, double tuning_margin) {
  GateDecision d;
  d.promote = true;
  bool saw_new = false;
  for (const auto& p : platforms) {
    saw_new |= p.is_new;
    if (!p.teacher || !p.student) {
      d.reasons.push_back(
          format("%s%s: no evaluation data, not compared", p.platform.c_str(), p.is_new ? " (new)" : ""));
      if (p.is_new) {
        d.promote = false;  // nothing shows the new platform was learned
        d.reasons.back() += " (the new platform must show it was learned)";
        d.blocking.push_back(p.platform + " (new): not evaluated (no held-out task with 2 measured programs)");
      }
      continue;
    }
    std::string line = measured(p);
    if (p.is_new) {
      const bool ok = p.student->top1_mean > p.teacher->top1_mean;
      line += format("; against the teacher's zero-shot top-1 mean: %s", ok ? "learned" : "not better than zero-shot");
      d.promote &= ok;
      if (!ok) {
        d.blocking.push_back(
            format("%s (new): top-1 mean %.3f on %lld held-out tasks, not above the teacher's "
                   "zero-shot %.3f",
                   p.platform.c_str(), p.student->top1_mean, static_cast<long long>(p.tasks), p.teacher->top1_mean));
      }
    } else {
      const std::vector<std::string> lost = losses(p, margin, tuning_margin);
      line += format("; margins %.4f top-1, %.0f%% tuning proxy: %s", margin, 100 * tuning_margin,
                     lost.empty() ? "kept" : ("forgot (" + joined(lost) + ")").c_str());
      if (2 * p.top1_mean_se > margin) {
        line += format(" (2 se of the top-1 mean, %.4f, exceed the margin: too few tasks to resolve it)",
                       2 * p.top1_mean_se);
      }
      d.promote &= lost.empty();
      if (!lost.empty()) d.blocking.push_back(p.platform + ": forgot (" + joined(lost) + ")");
    }
    d.reasons.push_back(std::move(line));
  }
  if (!saw_new) {
    d.promote = false;
    d.reasons.emplace_back("no new platform among the compared ones");
    d.blocking.emplace_back("no new platform among the compared ones");
  }
  return d;
}

}  // namespace tcl::onboarding
