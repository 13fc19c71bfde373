// tests/onboarding/run_round_test.cc — a round run over a record source
// (onboarding/round.h's run_round): which candidates make the pool (not
// measured, not pending), how its tasks are numbered, the caller's budget
// (a refusal picks nothing), cancellation; and the job workflows' read
// share (onboarding/record_source.h). In-memory sources; the registry's is
// exercised end to end by the sample-request tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "onboarding/record_source.h"
#include "onboarding/round.h"

namespace tcl::onboarding {
namespace {

class Held : public SourceRecord {
 public:
  explicit Held(const core::Record* r) : r_(r) {}
  const core::Record* get() override { return r_; }

 private:
  const core::Record* r_;
};

struct Stored {
  std::string id;
  core::Record record;
  bool parses = true;
};

// A platform's uploads, in memory.
class MemoryRoundSource : public RoundSource {
 public:
  std::vector<Stored> measurements, pool;
  std::unordered_set<std::string> open;

  Status measured(const std::function<bool(const std::string&, SourceRecord&)>& sink) override {
    return stream(measurements, sink);
  }
  Result<std::unordered_set<std::string>> pending() override { return open; }
  Status candidates(const std::function<bool(const std::string&, SourceRecord&)>& sink) override {
    return stream(pool, sink);
  }

 private:
  static Status stream(const std::vector<Stored>& rows,
                       const std::function<bool(const std::string&, SourceRecord&)>& sink) {
    for (const Stored& s : rows) {
      Held r(s.parses ? &s.record : nullptr);
      if (!sink(s.id, r)) break;
    }
    return Status::ok();
  }
};

Stored program(const std::string& id, const std::string& task) {
  Stored s{id, {}, true};
  s.record.workload_key = task;
  return s;
}

RoundRequest random_round(std::int64_t budget) {
  RoundRequest r;
  r.budget = [budget](std::int64_t) { return std::optional<std::int64_t>(budget); };
  r.options.strategy = sampler::Strategy::kRandom;
  r.options.min_per_task = 0;
  return r;
}

TEST(RunRoundTest, ThePoolIsTheCandidatesNeitherMeasuredNorPending) {
  MemoryRoundSource source;
  source.measurements = {program("m1", "t0"), program("m1", "t0"), program("c2", "t1")};
  source.pool = {program("c1", "t0"), program("c2", "t1"), program("c3", "t1"), program("c4", "t2"),
                 program("c5", "t0")};
  source.pool.push_back(program("c6", "t3"));
  source.pool.back().parses = false;
  source.open = {"c3"};
  Round round;
  ASSERT_TRUE(run_round(source, RoundModels{}, random_round(3), &round).is_ok());
  EXPECT_EQ(round.program_ids, (std::vector<std::string>{"c1", "c4", "c5"}));
  EXPECT_EQ(round.task_keys, (std::vector<std::string>{"t0", "t2"}));  // by first appearance in the pool
  EXPECT_EQ(round.measured, 2u);                                       // distinct programs
  EXPECT_EQ(round.budget, 3);
  ASSERT_EQ(round.picks.size(), 3u);
  std::vector<std::int64_t> picked;
  for (const sampler::Pick& p : round.picks) picked.push_back(p.index);
  std::sort(picked.begin(), picked.end());
  EXPECT_EQ(picked, (std::vector<std::int64_t>{0, 1, 2}));
}

TEST(RunRoundTest, TheCallersBudgetSeesThePoolAndMayRefuse) {
  MemoryRoundSource source;
  source.pool = {program("c1", "t0"), program("c2", "t0")};
  std::int64_t seen = -1;
  RoundRequest ask = random_round(0);
  ask.budget = [&](std::int64_t pool_size) {
    seen = pool_size;
    return std::optional<std::int64_t>();
  };
  Round round;
  ASSERT_TRUE(run_round(source, RoundModels{}, ask, &round).is_ok());
  EXPECT_EQ(seen, 2);
  EXPECT_EQ(round.budget, 0);
  EXPECT_TRUE(round.picks.empty());
  // A budget over the pool is the sampler's error, with the pool read.
  Round over;
  const Status s = run_round(source, RoundModels{}, random_round(3), &over);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_EQ(over.program_ids.size(), 2u);
}

TEST(RunRoundTest, ACancelStopsTheRead) {
  MemoryRoundSource source;
  source.pool = {program("c1", "t0")};
  std::atomic<bool> cancel{true};
  RoundRequest ask = random_round(1);
  ask.options.cancel = &cancel;
  Round round;
  EXPECT_EQ(run_round(source, RoundModels{}, ask, &round).code(), StatusCode::kCancelled);
  EXPECT_TRUE(round.picks.empty());
}

TEST(ReadShareTest, KeepsAQuarterMoreThanTheCapsAskAtMostAll) {
  EXPECT_EQ(share_to_keep(0, 1000), 1.0);  // no cap: everything
  EXPECT_EQ(share_to_keep(100, 0), 1.0);
  EXPECT_DOUBLE_EQ(share_to_keep(100, 1000), 0.125);
  EXPECT_DOUBLE_EQ(share_to_keep(90, 1000, 0.9), 0.125);  // the evaluation split's share comes on top
  EXPECT_EQ(share_to_keep(1000, 1000), 1.0);
  EXPECT_TRUE(in_share("ffffffff00", 1.0));
  EXPECT_FALSE(in_share("ffffffff00", 0.99));
  EXPECT_TRUE(in_share("00000000ff", 0.01));
  EXPECT_TRUE(in_share("7fffffff", 0.5));
  EXPECT_FALSE(in_share("80000000", 0.5));
}

}  // namespace
}  // namespace tcl::onboarding
