// tests/onboarding/run_log_test.cc — the run log (onboarding/run_log.h):
// append and reload, a rerun that skips what is logged, an old line with
// fewer columns, a torn last line from a killed run, and what it refuses.
#include "onboarding/run_log.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace tcl::onboarding {
namespace {

class RunLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("run_log_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "runs.tsv").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write(const std::string& text) const { std::ofstream(path_, std::ios::binary) << text; }
  std::string text() const {
    std::ifstream in(path_, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(RunLogTest, AppendedRunsLoadAgain) {
  {
    RunLog log(path_);  // no file yet
    EXPECT_EQ(log.size(), 0u);
    ASSERT_TRUE(log.add("x86-16c|1|rdu|0.1|base=ab", "12 0.5 0.25").is_ok());
    ASSERT_TRUE(log.add("x86-16c|1|random|0.1|base=ab", "12 0.4 0.2").is_ok());
    ASSERT_NE(log.find("x86-16c|1|rdu|0.1|base=ab"), nullptr);
    EXPECT_EQ(*log.find("x86-16c|1|rdu|0.1|base=ab"), "12 0.5 0.25");
  }
  EXPECT_EQ(text(), "x86-16c|1|rdu|0.1|base=ab\t12 0.5 0.25\nx86-16c|1|random|0.1|base=ab\t12 0.4 0.2\n");
  const RunLog again(path_);
  EXPECT_EQ(again.size(), 2u);
  ASSERT_NE(again.find("x86-16c|1|random|0.1|base=ab"), nullptr);
  EXPECT_EQ(*again.find("x86-16c|1|random|0.1|base=ab"), "12 0.4 0.2");
  EXPECT_EQ(again.find("x86-16c|2|random|0.1|base=ab"), nullptr);
}

TEST_F(RunLogTest, ARerunSkipsWhatIsLogged) {
  const std::vector<std::string> keys = {"a|1", "a|2", "b|1"};
  const auto run_all = [&](RunLog& log) {
    int ran = 0;
    for (const std::string& k : keys) {
      if (log.find(k)) continue;
      ++ran;
      EXPECT_TRUE(log.add(k, "run of " + k).is_ok());
    }
    return ran;
  };
  {
    RunLog log(path_);
    EXPECT_TRUE(log.add("a|2", "from before").is_ok());  // a run an earlier, killed bench finished
  }
  RunLog log(path_);
  EXPECT_EQ(run_all(log), 2);
  RunLog rerun(path_);
  EXPECT_EQ(run_all(rerun), 0);
  EXPECT_EQ(*rerun.find("a|2"), "from before");
  EXPECT_EQ(*rerun.find("b|1"), "run of b|1");
}

TEST_F(RunLogTest, OldLinesWithFewerColumnsLoadAsWritten) {
  write("# comment\n\nno tab here\nold|1\t7 0.5 0.25\nnew|1\t7 0.5 0.25 0.9 0.6\n");
  RunLog log(path_);
  EXPECT_EQ(log.size(), 2u);
  ASSERT_NE(log.find("old|1"), nullptr);
  EXPECT_EQ(*log.find("old|1"), "7 0.5 0.25");
  EXPECT_EQ(*log.find("new|1"), "7 0.5 0.25 0.9 0.6");
  // Logged again with every column: the later line wins, now and on reload.
  ASSERT_TRUE(log.add("old|1", "7 0.5 0.25 0.8 0.7").is_ok());
  EXPECT_EQ(*log.find("old|1"), "7 0.5 0.25 0.8 0.7");
  EXPECT_EQ(*RunLog(path_).find("old|1"), "7 0.5 0.25 0.8 0.7");
}

TEST_F(RunLogTest, ATornLastLineIsLeftOutAndCutBeforeTheNextRun) {
  write("a|1\t1 0.5\nb|1\t2 0.12");  // killed while writing b's line (0.1234 in full)
  RunLog log(path_);
  EXPECT_EQ(log.size(), 1u);
  EXPECT_EQ(log.find("b|1"), nullptr);  // run again, not read as 0.12
  ASSERT_TRUE(log.add("b|1", "2 0.1234").is_ok());
  EXPECT_EQ(text(), "a|1\t1 0.5\nb|1\t2 0.1234\n");
  const RunLog again(path_);
  EXPECT_EQ(again.size(), 2u);
  EXPECT_EQ(*again.find("b|1"), "2 0.1234");
}

TEST_F(RunLogTest, RefusesKeysAndValuesThatWouldBreakALine) {
  RunLog log(path_);
  EXPECT_EQ(log.add("", "1").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(log.add("a\tb", "1").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(log.add("a\nb", "1").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(log.add("a", "1\n2").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(log.size(), 0u);
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(RunLogTest, AnUnwritableFileFailsTheAddButKeepsTheRun) {
  RunLog log((dir_ / "missing-folder" / "runs.tsv").string());
  const Status s = log.add("a|1", "1 0.5");
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  ASSERT_NE(log.find("a|1"), nullptr);
  EXPECT_EQ(*log.find("a|1"), "1 0.5");
}

}  // namespace
}  // namespace tcl::onboarding
