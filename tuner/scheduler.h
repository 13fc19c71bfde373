// tuner/scheduler.h — which task of the network gets the next round.
//
// Both rules first give every task one round (in network order), so that
// each has a latency. Then:
//   round-robin  the tasks in turn;
//   gradient     Ansor's task scheduler (Zheng et al., OSDI 2020, §6;
//                python/tvm/auto_scheduler/task_scheduler.py) for the
//                objective Σ weight_i · best_i: the task whose next round is
//                expected to cut it most, i.e. the largest
//                  weight_i · −(α · backward_i + (1 − α) · forward_i)
//                with backward_i = (best_i now − best_i `window` rounds of
//                task i ago) / window (its recent slope, ≤ 0), forward_i =
//                −best_i / rounds_i (the optimistic guess that one more round
//                gains what an average round gained), α = 0.2, window = 3, as
//                Ansor. Ansor's third term (similar tasks) is left out: the
//                networks here have no two tasks of one shape. A task whose
//                programs all failed so far has an infinite latency and goes
//                first, for its first three rounds; after that it gets no more.
//                Ties go to the lower index.
//
// Thread-safety: a value; one per run.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tcl::tuner {

enum class SchedulerRule { kGradient, kRoundRobin };
Result<SchedulerRule> scheduler_rule(std::string_view name);  // "gradient", "round-robin"
std::string_view scheduler_rule_name(SchedulerRule rule);

class TaskScheduler {
 public:
  TaskScheduler(SchedulerRule rule, std::vector<int> weights);

  // The task of the next round; kNone when every task is exhausted.
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t next() const;
  // Task `task` has no program left to measure: it gets no more rounds.
  void exhaust(std::size_t task) { exhausted_[task] = true; }
  // Task `task` finished a round; its best latency (seconds, +inf when it has
  // no valid program yet) is now `best`.
  void record(std::size_t task, double best);

  std::size_t rounds(std::size_t task) const { return history_[task].size(); }

 private:
  double expected_gain(std::size_t task) const;

  SchedulerRule rule_;
  std::vector<int> weights_;
  std::vector<std::vector<double>> history_;  // per task: its best after each of its rounds
  std::vector<bool> exhausted_;
  std::size_t total_rounds_ = 0;
};

}  // namespace tcl::tuner
