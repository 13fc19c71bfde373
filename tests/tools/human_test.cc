// tools/human: the progress line and the aligned summaries, on fixed JSON.
#include "tools/human.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace tcl::tools {
namespace {

namespace json = boost::json;

TEST(HumanTest, ProgressLineHasPhaseEpochStepsLossTop1ProxyElapsedAndEta) {
  const json::value job = json::parse(
      R"({"id": 7, "state": "running", "progress": {"phase": "training", "epoch": 2, "epochs": 5, "steps": 120,)"
      R"( "loss": 3.156213277264645, "val_top1": 0.87312, "val_tuning_proxy": 0.9104, "records": 4000}})");
  EXPECT_EQ(progress_text(job, 100),
            "job 7 running: training  epoch 2/5  steps 120  loss 3.156  val top-1 0.8731  proxy 0.9104  elapsed 1m40s"
            "  eta 2m30s");
}

// After the last epoch a phase has its own count; the last epoch's numbers stay.
TEST(HumanTest, APhaseAfterTrainingShowsItsOwnCount) {
  const json::value job = json::parse(
      R"({"id": 7, "state": "running", "progress": {"phase": "fisher", "done": 12, "total": 43, "unit": "batches",)"
      R"( "epoch": 2, "epochs": 2, "loss": 0.5, "records": 4000}})");
  EXPECT_EQ(progress_text(job, 400), "job 7 running: fisher  12/43 batches (28%)  epoch 2/2  loss 0.5  elapsed 6m40s");
  const json::value judging = json::parse(R"({"id": 8, "state": "running", "progress": {"phase": "judging",)"
                                          R"( "platform": "x86-16c", "done": 1, "total": 3, "unit": "platforms"}})");
  EXPECT_EQ(progress_text(judging, 5), "job 8 running: judging  x86-16c  1/3 platforms (33%)  elapsed 5s");
  EXPECT_NE(job_summary(job).find("\nprogress  fisher  12/43 batches (28%)  epoch 2/2  loss 0.5  records 4000\n"),
            std::string::npos)
      << job_summary(job);
}

TEST(HumanTest, AFinishedOrStartingJobHasNoEta) {
  EXPECT_EQ(progress_text(json::parse(R"({"id": 7, "state": "queued", "progress": {}})"), 0),
            "job 7 queued  elapsed 0s");
  EXPECT_EQ(progress_text(json::parse(R"({"id": 7, "state": "succeeded", "progress": {"phase": "training",)"
                                      R"( "epoch": 5, "epochs": 5, "loss": 0.5}})"),
                          3725),
            "job 7 succeeded  epoch 5/5  loss 0.5  elapsed 1h02m");
}

TEST(HumanTest, AlignedPutsValuesInOneColumn) {
  EXPECT_EQ(aligned({{"name", "x16"}, {"measurements", "3"}}), "name          x16\nmeasurements  3\n");
  EXPECT_EQ(aligned({{"name", "x16"}, {"note", ""}}), "name  x16\nnote\n");  // no trailing blanks
}

TEST(HumanTest, ReadableNumbers) {
  const json::value v = json::parse(R"([3, 2.0, 0.123456, 1.5e-05, null])");
  EXPECT_EQ(readable(&v.at(0)), "3");
  EXPECT_EQ(readable(&v.at(1)), "2");
  EXPECT_EQ(readable(&v.at(2)), "0.1235");
  EXPECT_EQ(readable(&v.at(3)), "1.5e-05");
  EXPECT_EQ(readable(&v.at(4)), "-");
  EXPECT_EQ(readable(nullptr), "-");
  EXPECT_EQ(duration(59.4), "59s");
  EXPECT_EQ(duration(61), "1m01s");
}

TEST(HumanTest, SecondsSinceReadsTheApisTimestamps) {
  const auto s = seconds_since("2020-01-01T00:00:00Z");
  ASSERT_TRUE(s.has_value());
  EXPECT_GT(*s, 86400.0 * 365 * 5);
  EXPECT_FALSE(seconds_since("").has_value());
  EXPECT_FALSE(seconds_since("2020-01-01 00:00:00").has_value());
}

std::string written(std::FILE* f) {
  std::rewind(f);
  std::string out;
  char buf[512];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  return out;
}

TEST(HumanTest, PipedProgressWritesOneLinePerChange) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressLine line(f, /*terminal=*/false);
  const json::value a = json::parse(R"({"id": 1, "state": "running", "progress": {"phase": "reading"}})");
  const json::value b = json::parse(R"({"id": 1, "state": "running", "progress": {"phase": "training", "epoch": 1,)"
                                    R"( "epochs": 2, "loss": 0.25}})");
  line.update(a);
  line.update(a);
  line.update(b);
  line.update(b);
  line.finish();
  const std::string out = written(f);
  std::fclose(f);
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  ASSERT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;
  EXPECT_EQ(out.rfind("job 1 running: reading  elapsed ", 0), 0u) << out;
  EXPECT_NE(out.find("\njob 1 running: training  epoch 1/2  loss 0.25  elapsed "), std::string::npos) << out;
}

TEST(HumanTest, OnATerminalTheLineIsRedrawnInPlace) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressLine line(f, /*terminal=*/true);
  const json::value a = json::parse(R"({"id": 1, "state": "running", "progress": {"phase": "reading"}})");
  line.update(a);
  line.update(a);  // redrawn: the elapsed time moves on
  line.finish();
  const std::string out = written(f);
  std::fclose(f);
  EXPECT_EQ(out.rfind("\r\033[Kjob 1 running: reading  elapsed ", 0), 0u) << out;
  EXPECT_NE(out.find("\r\033[Kjob 1 running: reading  elapsed ", 1), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(out.back(), '\n');
}

TEST(HumanTest, ATerminalLineIsCutToTheTerminalsWidth) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressLine line(f, /*terminal=*/true, /*width=*/20);
  line.update(json::parse(R"({"id": 1, "state": "running", "progress": {"phase": "reading"}})"));
  line.finish();
  const std::string out = written(f);
  std::fclose(f);
  EXPECT_EQ(out, "\r\033[Kjob 1 running: read\n");  // 19 columns: the cursor stays on the line
}

// Per platform the figure on its standing split: the model a distill left
// alone reads the same on both rows; a candidate says why under the table.
TEST(HumanTest, LineageComparesOnTheStandingSplitAndSaysWhyACandidateIsOne) {
  const std::string text = lineage_table(json::parse(
      R"({"versions": [)"
      R"({"version": 1, "parent": null, "status": "promoted", "aliases": [], "platforms": ["x86-16c"],)"
      R"( "created_at": "2026-11-27T17:50:02Z", "status_reasons": {"reasons": ["the first version"]},)"
      R"( "metrics": {"x86-16c": {"top1": 0.351, "random_top1": 0.3,)"
      R"( "standing_split": {"top1": 0.5204, "random_top1": 0.4, "held_out": true}}}},)"
      R"({"version": 2, "parent": 1, "status": "candidate", "aliases": ["production"],)"
      R"( "platforms": ["x86-16c", "here"], "created_at": "2026-11-27T17:55:00Z",)"
      R"( "status_reasons": {"promote": false, "reasons": ["x86-16c: 17 tasks ...; kept", "here (new): ..."],)"
      R"( "blocking": ["here (new): top-1 mean 0.410 on 3 held-out tasks, not above the teacher's zero-shot 0.460"]},)"
      R"( "metrics": {"x86-16c": {"top1": 0.515, "standing_split": {"top1": 0.5204, "random_top1": 0.4}},)"
      R"( "here": {"top1": 0.41, "standing_split": {"top1": 0.41, "random_top1": 0.45, "held_out": true}}}},)"
      R"({"version": 3, "parent": 2, "status": "candidate", "aliases": ["active.here"], "platforms": ["here"],)"
      R"( "created_at": "2026-11-27T18:00:00Z", "status_reasons": {},)"
      R"( "metrics": {"here": {"eval_tasks": 0, "standing_split": {"top1": 0.9, "random_top1": 0.45,)"
      R"( "held_out": false}}}},)"
      R"({"version": 4, "parent": 2, "status": "candidate", "aliases": [], "platforms": ["x16"],)"
      R"( "created_at": "2026-11-27T18:05:00Z", "status_reasons": {}, "metrics": {"x16": {"top1": 0.875}}}]})"));
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_GE(lines.size(), 5u) << text;
  EXPECT_EQ(lines[0].rfind("VERSION  PARENT   STATUS", 0), 0u) << text;
  EXPECT_NE(lines[0].find("TOP-1 ON THE STANDING SPLIT"), std::string::npos) << text;
  // The model of x86-16c did not change: one figure on both rows.
  EXPECT_NE(lines[1].find(" x86-16c=0.520"), std::string::npos) << text;
  EXPECT_NE(lines[2].find(" x86-16c=0.520 here=0.410<"), std::string::npos) << text;
  EXPECT_NE(lines[3].find(" here=0.900+"), std::string::npos) << text;
  EXPECT_NE(lines[4].find(" x16=0.875*"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  * not on the standing split"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  + its model trained on those tasks"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  < below random order"), std::string::npos) << text;
  EXPECT_NE(text.find("\nversion 2 stays a candidate: here (new): top-1 mean 0.410 on 3 held-out tasks, not above "
                      "the teacher's zero-shot 0.460\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nversion 3 is a candidate: not judged by the promotion gate"), std::string::npos) << text;
  EXPECT_EQ(text.find("version 1 "), std::string::npos) << text;  // promoted: nothing to say
}

// The end of an onboarding in plain words: a candidate says so, why, how
// its model scores beside random order, and what to do next.
TEST(HumanTest, OnboardVerdictSaysPlainlyWhatTheUserGot) {
  const json::value platform = json::parse(R"({"name": "here", "counts": {"measurements": 44}})");
  const json::value candidate = json::parse(
      R"({"version": 5, "status": "candidate", "status_reasons": {"promote": false, "reasons": ["long"],)"
      R"( "blocking": ["here (new): top-1 mean 0.410 on 3 held-out tasks, not above the teacher's zero-shot 0.460"]},)"
      R"( "metrics": {"here": {"top1": 0.41, "standing_split": {"top1": 0.41, "random_top1": 0.452,)"
      R"( "eval_tasks": 3, "eval_programs": 19}}}})");
  const std::string text = onboard_verdict(candidate, platform, 4);
  EXPECT_EQ(text.rfind("version 5 stays a candidate: production is still version 4, which keeps serving here.\n", 0),
            0u)
      << text;
  EXPECT_NE(text.find("\n  why: here (new): top-1 mean 0.410 on 3 held-out tasks"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  its model of here scores top-1 0.410 on its standing split (3 held-out tasks, 19 measured "
                      "programs), below random order's 0.452\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n  here has 44 measurements: too few to learn its held-out tasks. Measure more"),
            std::string::npos)
      << text;

  const json::value promoted =
      json::parse(R"({"version": 5, "status": "promoted", "metrics": {"here": {"standing_split": {"top1": 0.61,)"
                  R"( "random_top1": 0.452, "eval_tasks": 3, "eval_programs": 19}}}})");
  EXPECT_EQ(onboard_verdict(promoted, platform, 5),
            "version 5 is production now: its model of here scores top-1 0.610 on its standing split (3 held-out "
            "tasks, 19 measured programs), random order's 0.452\n");
}

TEST(HumanTest, PlatformSummary) {
  const std::string text = platform_summary(json::parse(
      R"({"name": "x16", "target": "llvm -keys=cpu", "hardware_params": [16, 64, 64, 0, 0, 0, 0, 0], "description": "",)"
      R"( "created_at": "2026-11-27T17:50:02Z", "counts": {"programs": 4, "tasks": 1, "measurements": 3, "failed": 1,)"
      R"( "candidates": 0}, "onboarding": {"state": "measuring"}})"));
  EXPECT_NE(text.find("\nhardware      16,64,64,0,0,0,0,0  (cores,"), std::string::npos) << text;
  EXPECT_NE(text.find("\ndescription   -\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmeasurements  3 (+ 1 failed)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nonboarding    measuring\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace tcl::tools
