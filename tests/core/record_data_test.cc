// Every line of every file in ../shared/data must parse (real TVM logs of four
// platforms plus the small logs of every record version), under record.h's
// value rules too (no real line is rejected by them). Per record it also
// checks: the SAX fast path equals the DOM reference, parse(write(r)) == r,
// program ids are unique within a platform (the sets are deduplicated by
// (workload_key, steps)), tokens/TLP/hardware encodings are finite, and every
// 97th record's tokens match the reference encoder.
//
// The data is required: a missing directory is a failure, not a skip.
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/byte_stream.h"
#include "core/features.h"
#include "core/labels.h"
#include "core/line_reader.h"
#include "core/program_id.h"
#include "core/record.h"
#include "record_printer.h"
#include "reference_features.h"

namespace tcl::core {
namespace {

namespace fs = std::filesystem;

std::string data_dir() { return std::string(TCL_SOURCE_DIR) + "/../shared/data"; }

struct Stats {
  std::size_t lines = 0;
  std::size_t records = 0;
  std::size_t rewritten_identical = 0;
  std::size_t classes[3] = {0, 0, 0};
  std::size_t error_no_nonzero = 0;
  std::size_t max_steps = 0;
  std::size_t kinds[kNumStepKinds] = {};
  std::size_t duplicate_ids = 0;
  std::set<std::string> versions;
  std::set<std::string> targets;
  std::vector<std::string> errors;  // "file:line: reason"
};

// Parses and checks every line of `path`; accumulates into *st.
void check_file(const std::string& path, Stats* st, std::unordered_set<std::string>* ids,
                std::vector<std::uint64_t>* label_group, std::vector<double>* label_cost,
                std::unordered_map<std::string, std::uint64_t>* tasks) {
  auto reader = LineReader::open(path);
  ASSERT_TRUE(reader.is_ok()) << reader.status().to_string();
  RecordParser parser;
  Record r;
  Record ref;
  Record back;
  std::string written;
  std::vector<float> tokens(static_cast<std::size_t>(kDefaultMaxSteps) * kTokenDim);
  std::vector<float> tlp(static_cast<std::size_t>(kTlpGpu.seq_len) * kTlpGpu.emb_size);
  std::string_view line;
  while ((*reader)->next(&line)) {
    ++st->lines;
    if (is_skippable_line(line)) continue;
    const std::string where = path + ":" + std::to_string((*reader)->line_number());
    const Status s = parser.parse(line, &r);
    if (!s.is_ok()) {
      st->errors.push_back(where + ": " + s.message());
      continue;
    }
    ++st->records;
    // The SAX fast path and the DOM reference agree.
    const Status sr = parser.TEST_parse_dom(line, &ref);
    ASSERT_TRUE(sr.is_ok()) << where << ": " << sr.to_string();
    ASSERT_EQ(r, ref) << where;
    // Writer round trip.
    written.clear();
    write_record(r, &written);
    const Status sb = parser.parse(written, &back);
    ASSERT_TRUE(sb.is_ok()) << where << ": " << sb.to_string() << "\n" << written;
    ASSERT_EQ(back, r) << where << "\n" << written;
    if (written == line) ++st->rewritten_identical;

    const RecordClass c = classify(r);
    ++st->classes[static_cast<int>(c)];
    if (r.error_no != 0) ++st->error_no_nonzero;
    st->max_steps = std::max(st->max_steps, r.steps.size());
    for (const Step& step : r.steps) ++st->kinds[static_cast<int>(step.kind)];
    st->versions.insert(r.version);
    st->targets.insert(r.target);
    if (ids != nullptr && !ids->insert(program_id(r)).second) ++st->duplicate_ids;
    if (label_group != nullptr) {
      auto [it, inserted] = tasks->try_emplace(canonical_workload_key(r.workload_key), tasks->size());
      label_group->push_back(it->second);
      label_cost->push_back(c == RecordClass::kMeasured ? mean_cost(r) : 0.0);
    }

    // Encodings: right length, finite values.
    const int n = encode_tokens(r.steps, kDefaultMaxSteps, tokens.data());
    ASSERT_EQ(static_cast<std::size_t>(n), std::min<std::size_t>(r.steps.size(), kDefaultMaxSteps));
    for (std::size_t k = 0; k < static_cast<std::size_t>(n) * kTokenDim; ++k) {
      ASSERT_TRUE(std::isfinite(tokens[k])) << where;
    }
    const bool gpu = r.target.rfind("cuda", 0) == 0;
    encode_tlp(r.steps, gpu ? kTlpGpu : kTlpCpu, tlp.data());
    if (st->records % 97 == 1) {
      const auto doc = boost::json::parse(line);
      const auto& steps = doc.at("i").as_array()[1].as_array()[1].as_array();
      const std::vector<float> want = testing::reference_tokens(steps, kDefaultMaxSteps);
      for (std::size_t k = 0; k < want.size(); ++k) {
        ASSERT_NEAR(tokens[k], want[k], 1e-5) << where << " token " << k / kTokenDim << " slot " << k % kTokenDim;
      }
      float hw[kHardwareDim];
      encode_hardware(r.hardware_params, r.target, hw);
      for (float x : hw) ASSERT_TRUE(std::isfinite(x) && x >= 0 && x <= 1.5f) << where;
    }
  }
  ASSERT_TRUE((*reader)->status().is_ok()) << (*reader)->status().to_string();
}

std::string report(const std::string& name, const Stats& st, double seconds) {
  std::string m = name + ": " + std::to_string(st.lines) + " lines, " + std::to_string(st.records) +
                  " records (measured " + std::to_string(st.classes[0]) + ", failed " + std::to_string(st.classes[1]) +
                  ", candidate " + std::to_string(st.classes[2]) + "), max steps " + std::to_string(st.max_steps) +
                  ", rewritten byte-identical " + std::to_string(st.rewritten_identical) + ", " +
                  std::to_string(seconds) + " s\n  kinds:";
  for (int k = 0; k < kNumStepKinds; ++k) {
    if (st.kinds[k] == 0) continue;
    m += ' ';
    m += step_kind_name(static_cast<StepKind>(k));
    m += '=';
    m += std::to_string(st.kinds[k]);
  }
  m += "\n  versions:";
  for (const auto& v : st.versions) {
    m += ' ';
    m += v;
  }
  return m;
}

void expect_no_errors(const Stats& st) {
  std::string first;
  for (std::size_t i = 0; i < st.errors.size() && i < 20; ++i) first += "  " + st.errors[i] + "\n";
  EXPECT_TRUE(st.errors.empty()) << st.errors.size() << " lines failed to parse:\n" << first;
}

TEST(RecordDataTest, DataDirectoryIsPresent) {
  const std::string dir = data_dir();
  ASSERT_TRUE(fs::is_directory(dir))
      << "test data not found at " << dir
      << ": the real measurement records must sit in ../shared/data beside the repository";
  for (const char* f : {"x86-24c/records.jsonl.gz", "x86-16c/records.jsonl.gz", "gpu-2080ti/records.jsonl.gz",
                        "gpu-v100/records.jsonl.gz"}) {
    EXPECT_TRUE(fs::is_regular_file(dir + "/" + f)) << "missing " << dir << "/" << f;
  }
  EXPECT_TRUE(fs::is_directory(dir + "/formats")) << "missing " << dir << "/formats";
}

class PlatformDataTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PlatformDataTest, EveryLineParsesAndRoundTrips) {
  const std::string path = data_dir() + "/" + GetParam() + "/records.jsonl.gz";
  ASSERT_TRUE(fs::is_regular_file(path)) << "test data not found: " << path;
  const auto t0 = std::chrono::steady_clock::now();
  Stats st;
  std::unordered_set<std::string> ids;
  std::vector<std::uint64_t> group;
  std::vector<double> cost;
  std::unordered_map<std::string, std::uint64_t> tasks;
  check_file(path, &st, &ids, &group, &cost, &tasks);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s\n", report(GetParam(), st, secs).c_str());

  expect_no_errors(st);
  EXPECT_GT(st.records, 20000u);
  EXPECT_EQ(st.records, st.lines);
  // Deduplicated by (workload_key, steps): one program id per line.
  EXPECT_EQ(st.duplicate_ids, 0u);
  // Unmeasured lines were left out of these sets; failed ones are those with error_no != 0.
  EXPECT_EQ(st.classes[static_cast<int>(RecordClass::kCandidate)], 0u);
  EXPECT_EQ(st.classes[static_cast<int>(RecordClass::kFailed)], st.error_no_nonzero);
  EXPECT_GT(st.error_no_nonzero, 0u);
  EXPECT_EQ(st.kinds[static_cast<int>(StepKind::kUnknown)], 0u);
  EXPECT_LE(st.max_steps, static_cast<std::size_t>(kDefaultMaxSteps)) << "GPU records must fit the default length";

  // Labels: in (0, 1] for measurements, and each task's best program gets exactly 1.
  const std::vector<double> y = labels_from_costs(group, cost);
  // (A task whose every measurement failed has no label at all.)
  std::vector<int> best(tasks.size(), 0);
  std::vector<int> measured(tasks.size(), 0);
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (cost[i] > 0) {
      ASSERT_GT(y[i], 0.0);
      ASSERT_LE(y[i], 1.0);
      measured[group[i]] = 1;
      if (y[i] == 1.0) best[group[i]] = 1;
    } else {
      ASSERT_EQ(y[i], 0.0);
    }
  }
  EXPECT_EQ(best, measured);
  std::printf("  tasks: %zu, with at least one measurement: %zu\n", tasks.size(),
              static_cast<std::size_t>(std::count(measured.begin(), measured.end(), 1)));
}

INSTANTIATE_TEST_SUITE_P(Platforms, PlatformDataTest, ::testing::Values("x86-24c", "x86-16c", "gpu-2080ti", "gpu-v100"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           std::string n = param_info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// The defaults of the gzip upload limits (core/byte_stream.h) stay far above
// real logs: each inflates, streamed in 64 KiB pieces as an upload arrives,
// to under a quarter of the byte limit and under half the ratio limit.
TEST(RecordDataTest, RealLogsInflateWellWithinTheDefaultUploadLimits) {
  const InflateLimits limits;
  for (const char* platform : {"x86-24c", "x86-16c", "gpu-2080ti", "gpu-v100"}) {
    const std::string path = data_dir() + "/" + platform + "/records.jsonl.gz";
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << "test data not found: " << path;
    GzipInflater z(limits);
    double max_ratio = 0;  // while streaming, once past the minimum
    std::string chunk(64 << 10, '\0');
    while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
      const Status s =
          z.feed(std::string_view(chunk.data(), static_cast<std::size_t>(in.gcount())), [](std::string_view) {});
      ASSERT_TRUE(s.is_ok()) << path << ": " << s.to_string();
      if (z.bytes_out() >= limits.ratio_min_bytes_out) {
        max_ratio = std::max(max_ratio, static_cast<double>(z.bytes_out()) / static_cast<double>(z.bytes_in()));
      }
    }
    ASSERT_TRUE(z.finish().is_ok()) << path;
    std::printf("%s: %llu gzip bytes inflate to %llu (ratio %.1f, at most %.1f while streaming)\n", platform,
                static_cast<unsigned long long>(z.bytes_in()), static_cast<unsigned long long>(z.bytes_out()),
                static_cast<double>(z.bytes_out()) / static_cast<double>(z.bytes_in()), max_ratio);
    EXPECT_LT(z.bytes_out() * 4, limits.max_bytes_out) << platform;
    EXPECT_LT(max_ratio * 2, limits.max_ratio) << platform;
  }
}

TEST(RecordDataTest, EveryFormatsFileParses) {
  const std::string dir = data_dir() + "/formats";
  ASSERT_TRUE(fs::is_directory(dir)) << "test data not found: " << dir;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 5u);
  Stats st;
  for (const std::string& f : files) {
    check_file(f, &st, nullptr, nullptr, nullptr, nullptr);
    if (HasFatalFailure()) return;
  }
  std::printf("%s\n", report("formats", st, 0).c_str());
  expect_no_errors(st);
  EXPECT_GE(st.records, 150u);
  for (const char* v : {"v0.2", "v0.3", "v0.5", "v0.6"}) EXPECT_EQ(st.versions.count(v), 1u) << v;
  // The formats logs exercise cache reads/writes, rfactor and follow-fused splits.
  for (StepKind k : {StepKind::kCacheRead, StepKind::kCacheWrite, StepKind::kRfactor, StepKind::kFollowFusedSplit,
                     StepKind::kComputeRoot}) {
    EXPECT_GT(st.kinds[static_cast<int>(k)], 0u) << step_kind_name(k);
  }
}

}  // namespace
}  // namespace tcl::core
