// Tests of core/labels.h against a brute-force reference.
#include "core/labels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace tcl::core {
namespace {

Record rec(const std::string& wk, std::vector<double> costs, int error_no = 0) {
  Record r;
  r.workload_key = wk;
  r.target = "llvm";
  r.costs = std::move(costs);
  r.error_no = error_no;
  return r;
}

TEST(LabelsTest, MinOverMeanPerTask) {
  const std::vector<Record> rs = {
      rec("[\"a\", 1]", {1.0, 3.0}),    // mean 2 -> 0.5
      rec("[\"a\", 1]", {1.0}),         // mean 1 (best of a) -> 1
      rec("[\"a\",1]", {4.0}),          // same task, other formatting -> 0.25
      rec("[\"a\", 1]", {0.1}, 1),      // failed: excluded, not the min
      rec("[\"a\", 1]", {0.0, 0.0}),    // candidate: excluded
      rec("[\"a\", 1]", {0.2, 0.0}),    // a zero cost: failed
      rec("[\"b\", 2]", {10.0}),        // task b: alone -> 1
      rec("[\"b\", 2]", {20.0, 30.0}),  // 10/25 = 0.4
      rec("[\"c\"]", {5.0}, 6),         // a task with only failures: 0
  };
  const std::vector<double> y = compute_labels(rs);
  const std::vector<double> want = {0.5, 1.0, 0.25, 0, 0, 0, 1.0, 0.4, 0};
  ASSERT_EQ(y.size(), want.size());
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_DOUBLE_EQ(y[i], want[i]) << i;
}

TEST(LabelsTest, GenericFormMatchesBruteForce) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost(1e-6, 1e-3);
  std::vector<std::uint64_t> group(500);
  std::vector<double> mean(500);
  for (std::size_t i = 0; i < group.size(); ++i) {
    group[i] = 1000 + rng() % 17;
    mean[i] = rng() % 10 == 0 ? (rng() % 2 ? 0.0 : NAN) : cost(rng);
  }
  const std::vector<double> y = labels_from_costs(group, mean);
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!(mean[i] > 0)) {
      EXPECT_EQ(y[i], 0.0);
      continue;
    }
    double best = INFINITY;
    for (std::size_t j = 0; j < y.size(); ++j) {
      if (group[j] == group[i] && mean[j] > 0) best = std::min(best, mean[j]);
    }
    EXPECT_DOUBLE_EQ(y[i], best / mean[i]);
    EXPECT_GT(y[i], 0.0);
    EXPECT_LE(y[i], 1.0);
  }
}

}  // namespace
}  // namespace tcl::core
