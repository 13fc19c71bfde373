// The task scheduler follows its rule on planted latencies.
#include "tuner/scheduler.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tcl::tuner {
namespace {

TEST(SchedulerTest, EveryTaskGetsOneRoundFirstInNetworkOrder) {
  for (SchedulerRule rule : {SchedulerRule::kGradient, SchedulerRule::kRoundRobin}) {
    TaskScheduler s(rule, {1, 5, 2});
    for (std::size_t t = 0; t < 3; ++t) {
      EXPECT_EQ(s.next(), t);
      s.record(t, 1e-3);
    }
  }
}

TEST(SchedulerTest, RoundRobinTakesTheTasksInTurn) {
  TaskScheduler s(SchedulerRule::kRoundRobin, {1, 100, 1});
  for (std::size_t t = 0; t < 3; ++t) s.record(t, 1e-3 * (t + 1));
  for (std::size_t k = 0; k < 7; ++k) {
    const std::size_t t = s.next();
    EXPECT_EQ(t, k % 3);
    s.record(t, 1e-3);
  }
}

TEST(SchedulerTest, GradientGivesTheRoundToTheLargestExpectedCut) {
  // After one round each, the forward term alone: weight × best / rounds.
  TaskScheduler s(SchedulerRule::kGradient, {1, 3, 1});
  s.record(0, 4e-3);  // expected cut 4e-3 × 0.8
  s.record(1, 2e-3);  // 3 × 2e-3 × 0.8: the largest
  s.record(2, 5e-3);  // 5e-3 × 0.8
  EXPECT_EQ(s.next(), 1u);
  // Task 1 keeps its latency for three more rounds: its forward term shrinks
  // with its round count (2e-3·3/4 = 1.5e-3 · 0.8) and its slope is 0, so
  // task 2 (5e-3 · 0.8) is next.
  for (int k = 0; k < 3; ++k) s.record(1, 2e-3);
  EXPECT_EQ(s.next(), 2u);
  // A task that just improved fast gets credit for its slope too.
  TaskScheduler g(SchedulerRule::kGradient, {1, 1});
  for (double best : {10e-3, 8e-3, 4e-3, 2e-3}) g.record(0, best);  // 4 rounds: slope (2 − 10)/3 ms per round
  for (int k = 0; k < 4; ++k) g.record(1, 3e-3);                    // flat, but slower now
  // Task 0: 0.2 · 8e-3/3 + 0.8 · 2e-3/4 = 0.93e-3; task 1: 0.8 · 3e-3/4 = 0.6e-3.
  EXPECT_EQ(g.next(), 0u);
}

TEST(SchedulerTest, ATaskWithoutAValidProgramGoesFirstForThreeRoundsThenStops) {
  TaskScheduler s(SchedulerRule::kGradient, {1, 1});
  s.record(0, 1e-3);
  s.record(1, INFINITY);
  EXPECT_EQ(s.next(), 1u);
  s.record(1, INFINITY);
  EXPECT_EQ(s.next(), 1u);
  s.record(1, INFINITY);
  EXPECT_EQ(s.next(), 0u);
  EXPECT_EQ(s.rounds(1), 3u);
}

TEST(SchedulerTest, AnExhaustedTaskGetsNoMoreRounds) {
  for (SchedulerRule rule : {SchedulerRule::kGradient, SchedulerRule::kRoundRobin}) {
    TaskScheduler s(rule, {1, 5});
    s.exhaust(0);
    EXPECT_EQ(s.next(), 1u);
    s.record(1, 1e-3);
    EXPECT_EQ(s.next(), 1u);
    s.exhaust(1);
    EXPECT_EQ(s.next(), TaskScheduler::kNone);
  }
}

TEST(SchedulerTest, RulesByName) {
  EXPECT_EQ(*scheduler_rule("gradient"), SchedulerRule::kGradient);
  EXPECT_EQ(*scheduler_rule("round-robin"), SchedulerRule::kRoundRobin);
  EXPECT_FALSE(scheduler_rule("greedy"));
}

}  // namespace
}  // namespace tcl::tuner
