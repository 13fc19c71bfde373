// The CUDA backend on a real GPU (built with TCL_CUDA_MEASURE=ON, run by
// hand on the GPU machine: scripts/gpu/measure_pool.sh): the device query,
// generated kernels of every kind against the reference, and planted
// failures (an illegal address, a hang, a wrong answer, a compile error)
// that become failed measurements while the programs after them are still
// measured.
#include "measure/cuda_backend.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>

#include "core/line_reader.h"
#include "measure/candidates.h"
#include "measure/measurer.h"

namespace tcl::measure {
namespace {

GpuFacts device_facts() {
  auto facts = query_cuda_device(0);
  EXPECT_TRUE(facts) << facts.status().message();
  return facts ? *facts : GpuFacts{};
}

MeasureOptions fast_options() {
  MeasureOptions o;
  o.programs_per_unit = 16;
  o.runner.timing.repeat = 3;
  o.runner.timing.min_repeat_seconds = 0.001;
  o.runner.timeout_seconds = 20;
  return o;
}

std::unique_ptr<CudaBackend> backend_for(const GpuFacts& facts) {
  CudaBackendOptions o;
  o.arch = facts.arch;
  return std::make_unique<CudaBackend>(o);
}

TEST(CudaBackendTest, TheDeviceDescribesItself) {
  const GpuFacts facts = device_facts();
  EXPECT_TRUE(std::regex_match(facts.arch, std::regex("sm_[0-9]+"))) << facts.arch;
  EXPECT_GT(facts.sm_count, 0);
  EXPECT_EQ(facts.warp_size, 32);
  EXPECT_GE(facts.max_threads_per_block, 256);
  EXPECT_GE(facts.max_shared_memory_per_block, 16384);
  EXPECT_GT(facts.max_registers_per_block, 0);
  EXPECT_FALSE(facts.name.empty());
  const HardwareInfo hw = cuda_hardware(facts);
  EXPECT_NE(hw.target.find("-arch=" + facts.arch), std::string::npos) << hw.target;
  EXPECT_EQ(hw.params.max_shared_memory_per_block, facts.max_shared_memory_per_block);
  EXPECT_EQ(hw.params.warp_size, 32);
  std::printf("device: %s\n", describe(facts).c_str());
}

// Small shapes of every kind the GPU sketch covers, strides 1 and 2, padding.
const Workload kSmall[] = {{OpKind::kMatmul, {64, 48, 32}},
                           {OpKind::kBatchMatmul, {4, 32, 64, 16}},
                           {OpKind::kConv2d, {1, 14, 14, 16, 32, 3, 3, 1, 1}},
                           {OpKind::kConv2d, {1, 15, 15, 8, 16, 3, 3, 2, 0}},
                           {OpKind::kDepthwiseConv2d, {1, 16, 16, 32, 3, 3, 2, 1}}};

TEST(CudaBackendTest, GeneratedKernelsOfEveryKindGiveTheRightAnswer) {
  const GpuFacts facts = device_facts();
  const HardwareInfo hw = cuda_hardware(facts);
  std::vector<core::Record> records;
  for (const auto& w : kSmall) {
    auto c = workload_candidates(w, 12, 5, hw);
    records.insert(records.end(), c.begin(), c.end());
  }
  Measurer m(fast_options(), backend_for(facts));
  const auto out = m.measure(records);
  ASSERT_EQ(out.size(), records.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].error_no, 0) << out[i].workload_key << " " << m.last_errors()[i];
    ASSERT_EQ(out[i].costs.size(), 3u);
    for (double c : out[i].costs) {
      EXPECT_GT(c, 1e-7);  // a kernel launch takes microseconds
      EXPECT_LT(c, 1.0);
    }
  }
}

// Plants bad kernels for marked workloads (matmul with M = 2: an illegal
// address; 3: a hang; 5: a wrong answer; 7: a compile error).
class PlantedCudaBackend : public CudaBackend {
 public:
  using CudaBackend::CudaBackend;
  std::string codegen(const Program& p, std::string_view symbol) const override {
    const std::string head = "extern \"C\" __global__ void " + std::string(symbol) +
                             "(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ "
                             "out) {\n";
    if (p.workload.kind == OpKind::kMatmul) {
      switch (p.workload.args[0]) {
        case 2: return head + "  out[threadIdx.x + (1ll << 40)] = in0[0] + in1[0];\n}\n";
        // The inputs lie in [-1, 1): a volatile read the compiler cannot hoist spins forever.
        case 3: return head + "  const volatile float* p = in0;\n  while (p[0] < 2.0f) {}\n  out[0] = in1[0];\n}\n";
        case 5: return head + "  out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f + 0 * in0[0] * in1[0];\n}\n";
        case 7: return head + "  this is not CUDA;\n}\n";
        default: break;
      }
    }
    return CudaBackend::codegen(p, symbol);
  }
};

TEST(CudaBackendTest, PlantedFailuresBecomeFailedMeasurements) {
  const GpuFacts facts = device_facts();
  const HardwareInfo hw = cuda_hardware(facts);
  MeasureOptions o = fast_options();
  o.runner.timeout_seconds = 3;  // the planted hang costs this much
  CudaBackendOptions bo;
  bo.arch = facts.arch;
  std::vector<core::Record> planted;
  for (std::int64_t m : {4, 2, 4, 3, 4, 5, 7, 4}) {
    auto c = workload_candidates({OpKind::kMatmul, {m, 32, 32}}, 1, planted.size(), hw);
    planted.push_back(c.front());
  }
  Measurer measurer(o, std::make_unique<PlantedCudaBackend>(bo));
  const auto out = measurer.measure(planted);
  ASSERT_EQ(out.size(), planted.size());
  using core::MeasureError;
  const MeasureError want[] = {MeasureError::kNoError,
                               MeasureError::kRuntimeDeviceError,
                               MeasureError::kNoError,
                               MeasureError::kRunTimeoutError,
                               MeasureError::kNoError,
                               MeasureError::kWrongAnswerError,
                               MeasureError::kCompileDeviceError,
                               MeasureError::kNoError};
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].error_no, static_cast<std::int32_t>(want[i])) << i << ": " << measurer.last_errors()[i];
    if (want[i] != MeasureError::kNoError) {
      EXPECT_FALSE(measurer.last_errors()[i].empty()) << i;
    }
  }
  EXPECT_NE(measurer.last_errors()[1].find("ILLEGAL_ADDRESS"), std::string::npos) << measurer.last_errors()[1];
}

TEST(CudaBackendTest, TclMeasureMeasuresACudaPool) {
  const std::string dir = ::testing::TempDir();
  const std::string bin = std::string(TCL_BINARY_DIR) + "/measure/tcl-measure";
  const std::string pool = dir + "/cuda_pool.jsonl", measured = dir + "/cuda_measured.jsonl";
  ASSERT_EQ(std::system((bin + " hardware --target cuda > " + dir + "/hw.txt").c_str()), 0);
  std::ifstream hw_file(dir + "/hw.txt");
  const std::string hw((std::istreambuf_iterator<char>(hw_file)), std::istreambuf_iterator<char>());
  EXPECT_NE(hw.find("target: cuda -keys=cuda,gpu -arch=sm_"), std::string::npos) << hw;
  EXPECT_NE(hw.find("device: "), std::string::npos) << hw;
  ASSERT_EQ(std::system((bin + " candidates --model bert --target cuda --per-task 4 -o " + pool).c_str()), 0);
  ASSERT_EQ(std::system((bin + " run " + pool + " -o " + measured + " --repeat 2 --min-repeat-ms 1").c_str()), 0);
  auto reader = core::LineReader::open(measured);
  ASSERT_TRUE(reader);
  core::RecordParser parser;
  std::string_view line;
  int n = 0;
  while ((*reader)->next(&line)) {
    auto r = parser.parse(line);
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_EQ(r->error_no, 0) << line;
    EXPECT_EQ(core::classify(*r), core::RecordClass::kMeasured);
    ++n;
  }
  EXPECT_EQ(n, 24);  // 6 tasks of BERT-base (softmax skipped) x 4
}

}  // namespace
}  // namespace tcl::measure
