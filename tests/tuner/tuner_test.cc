// The tuning loop over its run folder, with a planted measurer: the network
// latency is the weighted sum of the tasks' bests and falls; a run stopped
// and started again makes the rounds an uninterrupted run makes; a round cut
// short is redone; another run's folder is refused; a failed upload is sent
// again with the next round.
#include "tuner/tuner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/files.h"
#include "tests/tuner/planted.h"

namespace tcl::tuner {
namespace {

namespace fs = std::filesystem;

class TunerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tcl-tuner-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    options_.network = "two-matmuls";
    options_.tasks = {{{measure::OpKind::kMatmul, {64, 128, 128}}, 1}, {{measure::OpKind::kMatmul, {128, 64, 256}}, 3}};
    options_.hardware = measure::local_hardware();
    options_.model = "online";
    options_.budget = 96;
    options_.per_round = 8;
    options_.seed = 3;
    options_.search.population = 96;
    std::vector<Space> spaces;
    for (const measure::Task& t : options_.tasks) spaces.push_back(*Space::create(t.workload, options_.hardware));
    hooks_.measure = testing::planted_measurer(spaces, {1.0, 2.0});
  }
  void TearDown() override { fs::remove_all(dir_); }

  TuneOptions at(const std::string& name, int budget) const {
    TuneOptions o = options_;
    o.dir = (dir_ / name).string();
    o.budget = budget;
    return o;
  }
  // The programs a run measured, in order (steps only: timestamps differ).
  static std::vector<std::string> programs(const std::string& dir) {
    std::vector<std::string> out;
    std::ifstream in(dir + "/measurements.jsonl");
    for (std::string line; std::getline(in, line);) {
      auto r = core::parse_record(line);
      std::string steps;
      core::write_steps(r->steps, &steps);
      out.push_back(r->workload_key + steps);
    }
    return out;
  }
  // Cell k (0-based) of a rounds.csv line.
  static std::string cell(const std::string& line, int k) {
    std::stringstream in(line);
    std::string c;
    for (int i = 0; i <= k; ++i) std::getline(in, c, ',');
    return c;
  }
  static std::vector<std::string> rows(const std::string& dir) {
    std::vector<std::string> out;
    std::ifstream in(dir + "/rounds.csv");
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

  fs::path dir_;
  TuneOptions options_;
  TuneHooks hooks_;
};

TEST_F(TunerTest, TheNetworkLatencyIsTheWeightedSumOfTheTasksBestsAndFalls) {
  const TuneOptions o = at("run", 96);
  auto r = tune(o, hooks_);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->measured, 96);
  EXPECT_EQ(r->rounds, 12);
  ASSERT_EQ(r->task_best_seconds.size(), 2u);
  EXPECT_DOUBLE_EQ(r->network_seconds, 1 * r->task_best_seconds[0] + 3 * r->task_best_seconds[1]);
  // best.jsonl holds each task's fastest program, as measured.
  std::ifstream best(o.dir + "/best.jsonl");
  std::vector<double> bests;
  for (std::string line; std::getline(best, line);) bests.push_back(core::mean_cost(*core::parse_record(line)));
  ASSERT_EQ(bests.size(), 2u);
  EXPECT_DOUBLE_EQ(bests[0], r->task_best_seconds[0]);
  EXPECT_DOUBLE_EQ(bests[1], r->task_best_seconds[1]);
  // The curve: one row per round, the latency known from round 2 on, never rising, and lower at the end.
  const auto lines = rows(o.dir);
  ASSERT_EQ(lines.size(), 13u);
  EXPECT_EQ(lines[0].substr(0, 11), "round,task,");
  std::vector<double> curve;
  for (std::size_t i = 2; i < lines.size(); ++i) curve.push_back(std::stod(cell(lines[i], 5)));
  for (std::size_t i = 1; i < curve.size(); ++i) EXPECT_LE(curve[i], curve[i - 1]);
  EXPECT_LT(curve.back(), curve.front());
  EXPECT_TRUE(fs::exists(o.dir + "/curve.svg"));
  EXPECT_TRUE(fs::exists(o.dir + "/curve-time.svg"));
}

TEST_F(TunerTest, AWarmupMeasuresEachTasksFirstRoundAtItsOwnSize) {
  TuneOptions o = at("warmup", 40);
  o.warmup = 2;
  auto r = tune(o, hooks_);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->measured, 40);
  // Rows: round,task,task name,measured,... — 2 and 2 for the two tasks' first rounds, then 8 a round.
  const auto lines = rows(o.dir);
  ASSERT_EQ(lines.size(), 1u + 2u + 4u + 1u);  // header, the warm-up, 4 rounds of 8, the last 4
  std::vector<int> measured;
  for (std::size_t i = 1; i < lines.size(); ++i) measured.push_back(std::stoi(cell(lines[i], 3)));
  EXPECT_EQ(measured, (std::vector<int>{2, 4, 12, 20, 28, 36, 40}));
  // The warm-up is part of the run's settings: a folder of the other size is another run's.
  TuneOptions plain = at("warmup", 48);
  auto refused = tune(plain, hooks_);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.status().message().find("another"), std::string::npos) << refused.status().message();
  TuneOptions negative = at("negative", 16);
  negative.warmup = -1;
  EXPECT_FALSE(tune(negative, hooks_));
}

TEST_F(TunerTest, AResumedRunMakesTheRoundsOfAnUninterruptedOne) {
  ASSERT_TRUE(tune(at("whole", 96), hooks_));
  ASSERT_TRUE(tune(at("parts", 40), hooks_));  // 5 rounds, then stopped
  int replayed = 0;
  TuneHooks hooks = hooks_;
  hooks.progress = [&](const RoundReport&, bool was_replayed) { replayed += was_replayed; };
  auto r = tune(at("parts", 96), hooks);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->resumed_rounds, 5);
  EXPECT_EQ(replayed, 5);
  EXPECT_EQ(programs((dir_ / "parts").string()), programs((dir_ / "whole").string()));
}

TEST_F(TunerTest, AResumedRunWithASmallWarmupMakesTheRoundsOfAnUninterruptedOne) {
  // After a 2-program warm-up the online model still scores at random (it
  // learns from 8 programs of a task): those scores must not depend on the
  // calls a resumed run never made.
  TuneOptions whole = at("whole", 40), first = at("parts", 4), rest = at("parts", 40);
  whole.warmup = first.warmup = rest.warmup = 2;
  ASSERT_TRUE(tune(whole, hooks_));
  ASSERT_TRUE(tune(first, hooks_));  // the two warm-up rounds, then stopped
  auto r = tune(rest, hooks_);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->resumed_rounds, 2);
  EXPECT_EQ(programs((dir_ / "parts").string()), programs((dir_ / "whole").string()));
}

TEST_F(TunerTest, ARoundCutShortIsRedone) {
  const TuneOptions o = at("cut", 32);
  ASSERT_TRUE(tune(o, hooks_));
  const auto before = programs(o.dir);
  // A run killed while appending a round: records past the last row.
  {
    std::ofstream log(o.dir + "/measurements.jsonl", std::ios::app);
    std::ifstream first(o.dir + "/measurements.jsonl");
    std::string line;
    std::getline(first, line);
    log << line << "\n" << line << "\n";
  }
  auto r = tune(at("cut", 48), hooks_);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->measured, 48);
  const auto after = programs(o.dir);
  ASSERT_EQ(after.size(), 48u);
  EXPECT_TRUE(std::equal(before.begin(), before.end(), after.begin()));
  EXPECT_EQ(programs(o.dir), programs(tune(at("straight", 48), hooks_) ? (dir_ / "straight").string() : ""));
}

TEST_F(TunerTest, AnotherRunsFolderIsRefused) {
  ASSERT_TRUE(tune(at("run", 16), hooks_));
  TuneOptions other = at("run", 32);
  other.seed = 4;
  auto r = tune(other, hooks_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("another run"), std::string::npos) << r.status().message();
  other = at("run", 32);
  other.model = "random";
  EXPECT_EQ(tune(other, hooks_).status().code(), StatusCode::kFailedPrecondition);
  other = at("run", 32);
  other.search.pick = PickRule::kFast;  // another pick rule is another run
  EXPECT_EQ(tune(other, hooks_).status().code(), StatusCode::kFailedPrecondition);
  other = at("run", 32);
  other.search.population_per_pick = 4;  // another search is another run
  EXPECT_EQ(tune(other, hooks_).status().code(), StatusCode::kFailedPrecondition);
  other.search.population_per_pick = 0;  // the same search (rounds of 8 × 128 > 96): the same run, resumed
  EXPECT_TRUE(tune(other, hooks_));
  other.search.population_per_pick = -1;
  EXPECT_EQ(tune(other, hooks_).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TunerTest, AFailedUploadIsSentAgainWithTheNextRound) {
  std::vector<std::pair<std::size_t, std::string>> calls;  // records per call, key
  int attempt = 0;
  TuneHooks hooks = hooks_;
  hooks.upload = [&](std::span<const core::Record> records, const std::string& key) -> Status {
    calls.emplace_back(records.size(), key);
    return ++attempt == 2 ? Status::unavailable("tcld is restarting") : Status::ok();
  };
  auto r = tune(at("up", 32), hooks);
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0].first, 8u);
  EXPECT_EQ(calls[1].first, 8u);   // round 1: refused
  EXPECT_EQ(calls[2].first, 16u);  // rounds 1 and 2 together
  EXPECT_EQ(calls[3].first, 8u);
  EXPECT_NE(calls[1].second, calls[2].second);
  EXPECT_EQ(r->pending_upload, 0);
  // A rerun with nothing left to tune sends nothing again.
  calls.clear();
  ASSERT_TRUE(tune(at("up", 32), hooks));
  EXPECT_TRUE(calls.empty());
}

TEST_F(TunerTest, ATaskWhoseSpaceIsMeasuredWholeEndsInsteadOfLooping) {
  TuneOptions o = at("small", 100000);
  o.tasks = {{{measure::OpKind::kMatmul, {1, 2, 1}}, 1}};
  TuneHooks hooks = hooks_;
  hooks.measure = testing::planted_measurer({*Space::create(o.tasks[0].workload, o.hardware)}, {1.0});
  auto r = tune(o, hooks);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_LT(r->measured, 100000);
  EXPECT_GT(r->measured, 8);
  auto p = programs(o.dir);
  std::sort(p.begin(), p.end());
  EXPECT_EQ(std::adjacent_find(p.begin(), p.end()), p.end());
}

TEST_F(TunerTest, RandomSearchNeedsNoModelAndStillMeasuresNothingTwice) {
  TuneOptions o = at("random", 64);
  o.model = "random";
  ASSERT_TRUE(tune(o, hooks_));
  auto p = programs(o.dir);
  std::sort(p.begin(), p.end());
  EXPECT_EQ(std::adjacent_find(p.begin(), p.end()), p.end());
  EXPECT_EQ(p.size(), 64u);
}

}  // namespace
}  // namespace tcl::tuner
