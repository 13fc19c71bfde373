// Generated programs against the reference, and failures as data: planted
// crashing, hanging, wrong and uncompilable programs become failed
// measurements while the others in the same module are still measured.
#include "measure/measurer.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "core/line_reader.h"
#include "measure/candidates.h"
#include "measure/cpu_backend.h"
#include "measure/hardware.h"
#include "measure/process.h"
#include "measure/reference.h"
#include "measure/schedule_gpu.h"

namespace tcl::measure {
namespace {

MeasureOptions fast_options() {
  MeasureOptions o;
  o.programs_per_unit = 64;  // one compiler run per test: compilation dominates
  o.runner.timing.repeat = 2;
  o.runner.timing.min_repeat_seconds = 0;
  o.runner.timeout_seconds = 20;
  return o;
}

// Tiny shapes of every kind; extents with several divisors so that tiles vary.
const Workload kTiny[] = {{OpKind::kMatmul, {12, 16, 8}},
                          {OpKind::kBatchMatmul, {2, 6, 8, 4}},
                          {OpKind::kConv2d, {1, 6, 6, 4, 8, 3, 3, 1, 1}},
                          {OpKind::kConv2d, {1, 7, 7, 3, 4, 3, 3, 2, 0}},
                          {OpKind::kConv2d, {1, 6, 6, 8, 4, 1, 1, 1, 0}},
                          {OpKind::kDepthwiseConv2d, {1, 8, 8, 8, 3, 3, 2, 1}},
                          {OpKind::kSoftmax, {6, 16}}};

TEST(ReferenceTest, CatchesAWrongElementAndNaN) {
  std::vector<float> want = {1, 2, 3}, got = want;
  EXPECT_EQ(compare_outputs(got, want), "");
  got[1] = 2.01f;
  EXPECT_NE(compare_outputs(got, want), "");
  got[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(compare_outputs(got, want), "");
}

TEST(ReferenceTest, MatmulByHand) {
  const Workload w{OpKind::kMatmul, {2, 2, 2}};
  const float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
  float out[4];
  reference(w, a, b, out);
  EXPECT_EQ(std::vector<float>(out, out + 4), (std::vector<float>{19, 22, 43, 50}));
}

TEST(MeasurerTest, GeneratedProgramsOfEveryKindGiveTheRightAnswer) {
  const HardwareInfo hw = local_hardware();
  std::vector<core::Record> records;
  for (const auto& w : kTiny) {
    auto c = workload_candidates(w, 8, 11, hw);
    records.insert(records.end(), c.begin(), c.end());
  }
  Measurer m(fast_options());
  std::size_t last_done = 0;
  const auto out = m.measure(records, [&](const MeasureProgress& p) { last_done = p.done; });
  ASSERT_EQ(out.size(), records.size());
  EXPECT_EQ(last_done, records.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].error_no, 0) << out[i].workload_key << " " << m.last_errors()[i];
    EXPECT_EQ(core::classify(out[i]), core::RecordClass::kMeasured) << out[i].workload_key;
    EXPECT_EQ(out[i].costs.size(), 2u);
    EXPECT_EQ(out[i].steps, records[i].steps);
    EXPECT_GT(out[i].all_cost, 0);
  }
}

// A CPU backend whose codegen plants bad programs for marked workloads
// (matmul with M = 2 crashes, 3 hangs, 5 answers wrong, 7 does not compile).
class PlantedBackend : public CpuBackend {
 public:
  std::string codegen(const Program& p, std::string_view symbol) const override {
    const std::string head =
        "extern \"C\" void " + std::string(symbol) + "(const float* in0, const float* in1, float* out, float* ws) {\n";
    if (p.workload.kind == OpKind::kMatmul) {
      switch (p.workload.args[0]) {
        case 2: return head + "  (void)in0; (void)in1; (void)out; (void)ws; __builtin_trap();\n}\n";
        case 3: return head + "  (void)in0; (void)in1; (void)out; (void)ws; for (volatile int i = 0;; ) (void)i;\n}\n";
        case 5: return head + "  (void)in0; (void)in1; (void)ws; for (int i = 0; i < 4 * 4; ++i) out[i] = 1.0f;\n}\n";
        case 7: return head + "  this is not C++;\n}\n";
        default: break;
      }
    }
    return CpuBackend::codegen(p, symbol);
  }
};

void expect_planted_failures(MeasureOptions o) {
  const HardwareInfo hw = local_hardware();
  std::vector<core::Record> records;
  for (std::int64_t m : {4, 2, 4, 3, 4, 5, 7, 4}) {
    auto c = workload_candidates({OpKind::kMatmul, {m, 4, 4}}, 1, static_cast<std::uint64_t>(records.size()), hw);
    records.push_back(c.front());
  }
  core::Record undecodable = records.front();
  undecodable.workload_key = R"(["tcl.matmul", 4, 4])";
  records.push_back(undecodable);
  o.runner.timeout_seconds = 2;  // the planted hang costs this much
  Measurer measurer(o, std::make_unique<PlantedBackend>());
  const auto out = measurer.measure(records);
  ASSERT_EQ(out.size(), records.size());
  using core::MeasureError;
  const MeasureError want[] = {MeasureError::kNoError,           MeasureError::kRuntimeDeviceError,
                               MeasureError::kNoError,           MeasureError::kRunTimeoutError,
                               MeasureError::kNoError,           MeasureError::kWrongAnswerError,
                               MeasureError::kCompileHostError,  MeasureError::kNoError,
                               MeasureError::kInstantiationError};
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].error_no, static_cast<std::int32_t>(want[i])) << i << ": " << measurer.last_errors()[i];
    if (want[i] == MeasureError::kNoError) {
      EXPECT_EQ(core::classify(out[i]), core::RecordClass::kMeasured);
    } else {
      EXPECT_EQ(core::classify(out[i]), core::RecordClass::kFailed);
      EXPECT_FALSE(measurer.last_errors()[i].empty()) << i;
    }
  }
  EXPECT_NE(measurer.last_errors()[1].find("signal"), std::string::npos) << measurer.last_errors()[1];
}

TEST(MeasurerTest, PlantedFailuresBecomeFailedMeasurements) { expect_planted_failures(fast_options()); }

// Units of two built four at a time: the bisection of a unit that does not
// compile happens on a build thread, beside the other units' builds.
TEST(MeasurerTest, PlantedFailuresInUnitsBuiltInParallel) {
  MeasureOptions o = fast_options();
  o.programs_per_unit = 2;
  o.build_jobs = 4;
  expect_planted_failures(o);
}

TEST(ProcessTest, RunForkedReportsStatusOutputCrashesAndTimeouts) {
  std::printf("unflushed ");  // the parent's pending stdout must not reach the child's output
  CommandResult ok = run_forked(
      [] {
        std::fprintf(stderr, "to stderr;");
        return write(1, "to fd 1", 7) == 7 ? 5 : 1;
      },
      10);
  std::fflush(stdout);
  EXPECT_TRUE(ok.started);
  EXPECT_FALSE(ok.timed_out);
  EXPECT_EQ(ok.exit_code, 5);
  EXPECT_EQ(ok.output, "to stderr;to fd 1");
  const CommandResult threw = run_forked([]() -> int { throw std::runtime_error("no"); }, 10);
  EXPECT_EQ(threw.exit_code, kForkedBodyThrew);
  const CommandResult crashed = run_forked(
      [] {
        std::abort();
        return 0;
      },
      10);
  EXPECT_EQ(crashed.exit_code, -1);
  EXPECT_NE(crashed.output.find("killed by signal"), std::string::npos) << crashed.output;
  const CommandResult hung = run_forked(
      [] {
        for (;;) pause();
        return 0;
      },
      0.3);
  EXPECT_TRUE(hung.timed_out);
}

TEST(HardwareTest, CudaHardwareFollowsTheDeviceFacts) {
  GpuFacts facts;
  facts.arch = "sm_80";
  facts.warp_size = 64;
  facts.max_threads_per_block = 512;
  facts.max_shared_memory_per_block = 65536;
  const HardwareInfo hw = cuda_hardware(facts);
  EXPECT_EQ(hw.target, "cuda -keys=cuda,gpu -arch=sm_80 -max_num_threads=512 -thread_warp_size=64");
  EXPECT_EQ(hw.params, (core::HardwareParams{-1, 16, 64, 65536, 2147483647, 512, 16, 64}));
  EXPECT_EQ(cuda_hardware().params, (core::HardwareParams{-1, 16, 64, 49152, 2147483647, 1024, 8, 32}));
}

TEST(TclMeasureCliTest, CandidatesWritesParseableRecordsPerTask) {
  const std::string out = ::testing::TempDir() + "/tcl_measure_pool.jsonl";
  const std::string cmd =
      std::string(TCL_BINARY_DIR) + "/measure/tcl-measure candidates --model mobilenet_v2 --per-task 3 -o " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto tasks = model_tasks("mobilenet_v2");
  ASSERT_TRUE(tasks);
  auto reader = core::LineReader::open(out);
  ASSERT_TRUE(reader);
  core::RecordParser parser;
  std::string_view line;
  std::map<std::string, int> per_task;
  while ((*reader)->next(&line)) {
    auto r = parser.parse(line);
    ASSERT_TRUE(r) << r.status().message();
    ++per_task[r->workload_key];
    EXPECT_TRUE(decode_program(*r)) << line;
  }
  EXPECT_EQ(per_task.size(), tasks->size());
  for (const auto& [key, n] : per_task) EXPECT_EQ(n, 3) << key;
  const std::string bad =
      std::string(TCL_BINARY_DIR) + "/measure/tcl-measure candidates --model vgg -o " + out + " 2>/dev/null";
  EXPECT_NE(std::system(bad.c_str()), 0);
}

TEST(TclMeasureCliTest, CudaCandidatesFollowTheGpuSketch) {
  const std::string out = ::testing::TempDir() + "/tcl_measure_cuda_pool.jsonl";
  const std::string bin = std::string(TCL_BINARY_DIR) + "/measure/tcl-measure candidates";
  const std::string cmd = bin + " --model bert --target cuda --per-task 3 -o " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto tasks = model_tasks("bert");
  ASSERT_TRUE(tasks);
  std::set<std::string> want;
  for (const Task& t : *tasks) {
    if (t.workload.kind != OpKind::kSoftmax) want.insert(encode_workload_key(t.workload));
  }
  auto reader = core::LineReader::open(out);
  ASSERT_TRUE(reader);
  core::RecordParser parser;
  std::string_view line;
  std::map<std::string, int> per_task;
  while ((*reader)->next(&line)) {
    auto r = parser.parse(line);
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_EQ(r->target, "cuda -keys=cuda,gpu -arch=sm_90 -max_num_threads=1024 -thread_warp_size=32");
    ASSERT_TRUE(r->hardware_params);
    EXPECT_EQ(r->hardware_params->max_shared_memory_per_block, 49152);
    auto w = decode_workload_key(r->workload_key);
    ASSERT_TRUE(w);
    EXPECT_TRUE(gpu_from_steps(*w, r->steps, gpu_limits(*r->hardware_params))) << line;
    auto p = decode_program(*r);  // the GPU sketch, for the CUDA backend
    ASSERT_TRUE(p) << p.status().message();
    EXPECT_TRUE(p->is_gpu());
    ++per_task[r->workload_key];
  }
  EXPECT_EQ(per_task.size(), want.size());
  for (const auto& key : want) EXPECT_EQ(per_task[key], 3) << key;
  EXPECT_NE(std::system((bin + " --model bert --target rocm -o " + out + " 2>/dev/null").c_str()), 0);
}

TEST(MeasurerTest, TheCpuBackendRefusesCudaRecordsByName) {
  auto records = workload_candidates({OpKind::kMatmul, {64, 64, 64}}, 2, 1, cuda_hardware());
  records.push_back(workload_candidates({OpKind::kMatmul, {8, 8, 8}}, 1, 1, local_hardware()).front());
  Measurer measurer(fast_options());
  const auto out = measurer.measure(records);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(out[i].error_no, static_cast<std::int32_t>(core::MeasureError::kInstantiationError));
    EXPECT_NE(measurer.last_errors()[i].find("cuda record"), std::string::npos) << measurer.last_errors()[i];
  }
  EXPECT_EQ(out[2].error_no, 0) << measurer.last_errors()[2];
}

// A session that reports the process it runs in, and is spent after the
// program whose matmul has M = 2 (as a CUDA context after an illegal address).
class SpendingBackend : public Backend {
 public:
  std::string_view name() const override { return "spending"; }
  bool accepts(const Program&) const override { return true; }
  std::string codegen(const Program&, std::string_view) const override { return ""; }
  BuildResult build(std::span<const std::string>, const std::string& stem) const override { return {0, stem, "", 0}; }
  std::unique_ptr<Session> open(const std::string&, std::string*) const override {
    struct Spending : Session {
      bool spent = false;
      RunResult run(const Program& p, std::string_view, const TimingOptions&) override {
        spent = p.workload.args[0] == 2;
        return {0, {static_cast<double>(getpid())}, ""};
      }
      bool usable() const override { return !spent; }
    };
    return std::make_unique<Spending>();
  }
};

TEST(RunnerTest, ASpentSessionGoesOnInAFreshChildWithoutBlame) {
  std::vector<Program> programs;
  std::vector<std::string> symbols;
  for (std::int64_t m : {1, 2, 3, 4}) {
    programs.push_back({{OpKind::kMatmul, {m, 4, 4}}, Schedule{}});
    symbols.push_back("p" + std::to_string(m));
  }
  const auto results = run_isolated(SpendingBackend(), "module", programs, symbols, RunnerOptions{});
  ASSERT_EQ(results.size(), 4u);
  for (const auto& r : results) {
    EXPECT_EQ(r.error_no, 0) << r.message;
    ASSERT_EQ(r.costs.size(), 1u);
    EXPECT_NE(r.costs[0], static_cast<double>(getpid()));  // measured in a child
  }
  EXPECT_EQ(results[0].costs[0], results[1].costs[0]);
  EXPECT_NE(results[1].costs[0], results[2].costs[0]);  // the spent child ended after program 2
  EXPECT_EQ(results[2].costs[0], results[3].costs[0]);
}

TEST(TclMeasureCliTest, RunRefusesMixedTargetsAndCudaRecordsWithoutTheBackend) {
  const std::string dir = ::testing::TempDir();
  const std::string bin = std::string(TCL_BINARY_DIR) + "/measure/tcl-measure";
  auto write = [&](const std::string& name, const std::vector<core::Record>& records) {
    std::ofstream f(dir + "/" + name);
    std::string line;
    for (const auto& r : records) {
      line.clear();
      core::write_record(r, &line);
      f << line << "\n";
    }
    return dir + "/" + name;
  };
  auto run = [&](const std::string& in) {
    const std::string err = dir + "/run.err";
    const int rc = std::system((bin + " run " + in + " -o " + dir + "/out.jsonl 2>" + err).c_str());
    std::ifstream f(err);
    return std::make_pair(rc, std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()));
  };
  auto cuda = workload_candidates({OpKind::kMatmul, {64, 64, 64}}, 2, 1, cuda_hardware());
  auto cpu = workload_candidates({OpKind::kMatmul, {8, 8, 8}}, 1, 1, local_hardware());
  std::vector<core::Record> mixed = cpu;
  mixed.insert(mixed.end(), cuda.begin(), cuda.end());
  const auto [mixed_rc, mixed_err] = run(write("mixed.jsonl", mixed));
  EXPECT_NE(mixed_rc, 0);
  EXPECT_NE(mixed_err.find("one kind of target per file"), std::string::npos) << mixed_err;
#if !TCL_MEASURE_HAS_CUDA  // tcl-measure built without its CUDA backend (CI)
  const auto [cuda_rc, cuda_err] = run(write("cuda.jsonl", cuda));
  EXPECT_NE(cuda_rc, 0);
  EXPECT_NE(cuda_err.find("without the CUDA backend"), std::string::npos) << cuda_err;
  // hardware --target cuda says where its facts come from.
  const std::string hw = dir + "/hw.txt";
  ASSERT_EQ(std::system((bin + " hardware --target cuda > " + hw).c_str()), 0);
  std::ifstream f(hw);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("hardware_params: [-1, 16, 64, 49152, 2147483647, 1024, 8, 32]"), std::string::npos) << text;
  EXPECT_NE(text.find("device: built without CUDA"), std::string::npos) << text;
#endif
}

}  // namespace
}  // namespace tcl::measure
