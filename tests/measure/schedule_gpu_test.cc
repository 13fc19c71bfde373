#include "measure/schedule_gpu.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "measure/candidates.h"
#include "measure/hardware.h"

namespace tcl::measure {
namespace {

const Workload kWorkloads[] = {{OpKind::kMatmul, {128, 768, 3072}},
                               {OpKind::kBatchMatmul, {12, 128, 64, 128}},
                               {OpKind::kConv2d, {1, 56, 56, 64, 64, 3, 3, 1, 1}},
                               {OpKind::kConv2d, {1, 224, 224, 3, 64, 7, 7, 2, 3}},
                               {OpKind::kDepthwiseConv2d, {1, 112, 112, 96, 3, 3, 2, 1}}};

std::string steps_text(const std::vector<core::Step>& steps) {
  std::string s;
  core::write_steps(steps, &s);
  return s;
}

// The steps of a record TVM wrote for CUDA (shared/data/gpu-v100).
std::vector<core::Step> tvm_steps(const std::string& steps_json) {
  const std::string line =
      R"({"i": [["[\"x\"]", "cuda", [-1, 16, 64, 49152, 2147483647, 1024, 8, 32], "", 0, []], [[], )" + steps_json +
      R"(]], "r": [[0.001], 0, 1.0, 1638198229], "v": "v0.6"})";
  auto r = core::parse_record(line);
  EXPECT_TRUE(r) << r.status().message();
  return r ? r->steps : std::vector<core::Step>{};
}

// TVM's log of a matmul_layer (M 128, K 4032, N 1000) on a V100: our steps
// for the same tiles are the same list, but for the extents of the two
// cooperative-fetch splits, which TVM logs stale (96 and 24 whatever the
// tiles, from the state the evolution started from); ours are the true
// shared tile sizes (64 x 24 of A, 24 x 20 of B).
TEST(ScheduleGpuTest, MatmulStepsAreTvmsCudaSteps) {
  auto want = tvm_steps(
      R"([["CHW", 2, "local"], ["SP", 2, 0, 128, [4, 16, 1, 1], 1], ["SP", 2, 5, 1000, [1, 5, 2, 2], 1], )"
      R"(["SP", 2, 10, 4032, [24, 1], 1], ["RE", 2, [0, 5, 1, 6, 2, 7, 10, 11, 3, 8, 12, 4, 9]], )"
      R"(["FSP", 3, 0, 1, 3], ["FSP", 3, 4, 2, 3], ["RE", 3, [0, 4, 1, 5, 2, 6, 3, 7]], ["CA", 2, 3, 5], )"
      R"(["CHR", 1, "shared", [2]], ["CA", 2, 3, 6], ["CHR", 0, "shared", [3]], ["CA", 1, 4, 6], )"
      R"(["FU", 5, [0, 1]], ["AN", 5, 0, 5], ["FU", 5, [1, 2]], ["AN", 5, 1, 4], ["FU", 5, [2, 3]], )"
      R"(["AN", 5, 2, 6], ["FU", 3, [0, 1]], ["SP", 3, 0, 96, [2], 1], ["AN", 3, 1, 2], )"
      R"(["FFSP", 3, 0, [2, 1], 1, 1], ["AN", 3, 1, 6], ["FU", 1, [0, 1]], ["SP", 1, 0, 24, [4], 1], )"
      R"(["AN", 1, 1, 2], ["FFSP", 1, 0, [2, 1], 1, 1], ["AN", 1, 1, 6], ["PR", 4, 0, "auto_unroll_max_step$512"]])");
  ASSERT_EQ(want.size(), 30u);
  want[20].extent = 24 * 20;  // B.shared
  want[25].extent = 64 * 24;  // A.shared
  const Workload w{OpKind::kMatmul, {128, 1000, 4032}};
  const GpuSchedule s{{{4, 16, 1, 1}, {1, 5, 2, 2}}, {{24, 1}}, {4, 2}, 512};
  ASSERT_TRUE(validate_gpu(w, s, GpuLimits{}));
  EXPECT_EQ(steps_text(to_gpu_steps(w, s)), steps_text(want));
  auto back = gpu_from_steps(w, want, GpuLimits{});
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(*back, s);
}

// The same for TVM's conv2d_layer (NCHW there, NHWC here): four spatial and
// three reduction loops give the same step list but for extents and lengths.
TEST(ScheduleGpuTest, Conv2dStepsHaveTheLayoutOfTvmsCudaSteps) {
  auto want = tvm_steps(
      R"([["CHW", 3, "local"], ["SP", 3, 0, 128, [1, 4, 1, 2], 1], ["SP", 3, 5, 168, [1, 12, 14, 1], 1], )"
      R"(["SP", 3, 10, 21, [1, 1, 1, 1], 1], ["SP", 3, 15, 21, [1, 7, 1, 3], 1], ["SP", 3, 20, 1008, [1, 3], 1], )"
      R"(["SP", 3, 23, 1, [1, 1], 1], ["SP", 3, 26, 1, [1, 1], 1], )"
      R"(["RE", 3, [0, 5, 10, 15, 1, 6, 11, 16, 2, 7, 12, 17, 20, 23, 26, 21, 24, 27, 3, 8, 13, 18, 22, 25, 28, 4, 9, 14, 19]], )"
      R"(["FSP", 4, 0, 1, 3], ["FSP", 4, 4, 2, 3], ["FSP", 4, 8, 3, 3], ["FSP", 4, 12, 4, 3], )"
      R"(["RE", 4, [0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15]], ["CA", 3, 4, 11], )"
      R"(["CHR", 2, "shared", [3]], ["CA", 3, 4, 14], ["CHR", 1, "shared", [4]], ["CA", 2, 5, 14], ["CI", 1], )"
      R"(["FU", 6, [0, 1, 2, 3]], ["AN", 6, 0, 5], ["FU", 6, [1, 2, 3, 4]], ["AN", 6, 1, 4], )"
      R"(["FU", 6, [2, 3, 4, 5]], ["AN", 6, 2, 6], ["FU", 4, [0, 1, 2, 3]], ["SP", 4, 0, 294, [1], 1], )"
      R"(["AN", 4, 1, 2], ["FFSP", 4, 0, [4, 3, 2, 1], 1, 1], ["AN", 4, 1, 6], ["FU", 2, [0, 1, 2, 3]], )"
      R"(["SP", 2, 0, 252, [2], 1], ["AN", 2, 1, 2], ["FFSP", 2, 0, [4, 3, 2, 1], 1, 1], ["AN", 2, 1, 6], )"
      R"(["PR", 5, 0, "auto_unroll_max_step$1024"]])");
  ASSERT_EQ(want.size(), 37u);
  const Workload w{OpKind::kConv2d, {1, 56, 56, 64, 64, 3, 3, 1, 1}};
  core::SplitMix64 rng(5);
  auto got = to_gpu_steps(w, sample_gpu_schedule(w, GpuLimits{}, rng));
  ASSERT_EQ(got.size(), want.size());
  for (auto* list : {&want, &got}) {
    for (auto& st : *list) {
      st.extent = 0;
      for (auto& l : st.lengths) l = 1;
      if (st.kind == core::StepKind::kPragma) st.pragma_type.clear();
    }
  }
  EXPECT_EQ(steps_text(got), steps_text(want));
}

// TVM's depthwise_conv2d_layer (NCHW, its kernel [C, 1, KH, KW]): the same
// layout but for the kernel tile, which is 3-D here ([KH, KW, C], NHWC), so
// its cooperative fetch fuses 3 loops, not 4.
TEST(ScheduleGpuTest, DepthwiseStepsHaveTheLayoutOfTvmsCudaSteps) {
  auto want = tvm_steps(
      R"([["CHW", 3, "local"], ["SP", 3, 0, 128, [1, 2, 1, 1], 1], ["SP", 3, 5, 168, [1, 3, 1, 1], 1], )"
      R"(["SP", 3, 10, 42, [1, 7, 2, 3], 1], ["SP", 3, 15, 42, [1, 14, 1, 3], 1], ["SP", 3, 20, 3, [3, 1], 1], )"
      R"(["SP", 3, 23, 3, [1, 3], 1], )"
      R"(["RE", 3, [0, 5, 10, 15, 1, 6, 11, 16, 2, 7, 12, 17, 20, 23, 21, 24, 3, 8, 13, 18, 22, 25, 4, 9, 14, 19]], )"
      R"(["FSP", 4, 0, 1, 3], ["FSP", 4, 4, 2, 3], ["FSP", 4, 8, 3, 3], ["FSP", 4, 12, 4, 3], )"
      R"(["RE", 4, [0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15]], ["CA", 3, 4, 11], )"
      R"(["CHR", 2, "shared", [3]], ["CA", 3, 4, 13], ["CHR", 1, "shared", [4]], ["CA", 2, 5, 13], ["CI", 1], )"
      R"(["FU", 6, [0, 1, 2, 3]], ["AN", 6, 0, 5], ["FU", 6, [1, 2, 3, 4]], ["AN", 6, 1, 4], )"
      R"(["FU", 6, [2, 3, 4, 5]], ["AN", 6, 2, 6], ["FU", 4, [0, 1, 2, 3]], ["SP", 4, 0, 9, [1], 1], )"
      R"(["AN", 4, 1, 2], ["FFSP", 4, 0, [4, 3, 2, 1], 1, 1], ["AN", 4, 1, 6], ["FU", 2, [0, 1, 2, 3]], )"
      R"(["SP", 2, 0, 160, [2], 1], ["AN", 2, 1, 2], ["FFSP", 2, 0, [4, 3, 2, 1], 1, 1], ["AN", 2, 1, 6], )"
      R"(["PR", 5, 0, "auto_unroll_max_step$1024"]])");
  ASSERT_EQ(want.size(), 36u);
  ASSERT_EQ(want[25].kind, core::StepKind::kFuse);
  want[25].ids = {0, 1, 2};  // the kernel tile: 3-D here
  const Workload w{OpKind::kDepthwiseConv2d, {1, 112, 112, 96, 3, 3, 2, 1}};
  core::SplitMix64 rng(8);
  auto got = to_gpu_steps(w, sample_gpu_schedule(w, GpuLimits{}, rng));
  ASSERT_EQ(got.size(), want.size());
  for (auto* list : {&want, &got}) {
    for (auto& st : *list) {
      st.extent = 0;
      for (auto& l : st.lengths) l = 1;
      if (st.kind == core::StepKind::kPragma) st.pragma_type.clear();
    }
  }
  EXPECT_EQ(steps_text(got), steps_text(want));
}

TEST(ScheduleGpuTest, SamplesRespectTheLimitsAndDecodeBack) {
  GpuLimits small;
  small.max_threads_per_block = 256;
  small.max_shared_memory_per_block = 16384;
  small.max_vthread_extent = 4;
  for (const GpuLimits& limits : {GpuLimits{}, small}) {
    for (const auto& w : kWorkloads) {
      core::SplitMix64 rng(11);
      int warp_multiples = 0;
      for (int i = 0; i < 100; ++i) {
        const GpuSchedule s = sample_gpu_schedule(w, limits, rng);
        ASSERT_TRUE(validate_gpu(w, s, limits)) << encode_workload_key(w);
        const GpuShape g = gpu_shape(w, s);
        EXPECT_LE(g.threads, limits.max_threads_per_block);
        EXPECT_LE(g.vthreads, limits.max_vthread_extent);
        EXPECT_LE(4 * (g.shared_floats[0] + g.shared_floats[1]), limits.max_shared_memory_per_block);
        EXPECT_GE(g.threads, limits.warp_size);  // TVM's InitThreadBind rule
        warp_multiples += g.threads % limits.warp_size == 0;
        const auto steps = to_gpu_steps(w, s);
        auto back = gpu_from_steps(w, steps, limits);
        ASSERT_TRUE(back) << steps_text(steps) << ": " << back.status().message();
        EXPECT_EQ(*back, s);
      }
      EXPECT_GE(warp_multiples, 40) << encode_workload_key(w);
    }
  }
}

TEST(ScheduleGpuTest, SamplingIsDeterministicAndVaried) {
  const Workload& w = kWorkloads[0];
  core::SplitMix64 a(3), b(3);
  std::set<std::string> distinct;
  for (int i = 0; i < 50; ++i) {
    const GpuSchedule s = sample_gpu_schedule(w, GpuLimits{}, a);
    EXPECT_EQ(s, sample_gpu_schedule(w, GpuLimits{}, b));
    distinct.insert(steps_text(to_gpu_steps(w, s)));
  }
  EXPECT_GE(distinct.size(), 45u);
}

TEST(ScheduleGpuTest, ForeignStepsAreRejected) {
  const Workload& w = kWorkloads[0];
  core::SplitMix64 rng(1);
  const GpuSchedule s = sample_gpu_schedule(w, GpuLimits{}, rng);
  auto steps = to_gpu_steps(w, s);
  auto no_bind = steps;
  no_bind.erase(no_bind.begin() + 14);  // the blockIdx.x annotation
  EXPECT_FALSE(gpu_from_steps(w, no_bind, GpuLimits{}));
  auto bad_split = steps;
  bad_split[1].lengths[0] += 1;  // no longer divides 128... or exceeds a limit
  EXPECT_FALSE(gpu_from_steps(w, bad_split, GpuLimits{}));
  GpuLimits tiny;
  tiny.max_threads_per_block = 1;
  if (gpu_shape(w, s).threads > 1) {
    EXPECT_FALSE(gpu_from_steps(w, steps, tiny));
  }
  EXPECT_TRUE(gpu_from_steps(w, steps, GpuLimits{}));
  EXPECT_FALSE(gpu_supported({OpKind::kSoftmax, {128, 128}}));
}

TEST(ScheduleGpuTest, CudaCandidatesParseAndDecode) {
  const HardwareInfo hw = cuda_hardware();
  EXPECT_EQ(hw.target, "cuda -keys=cuda,gpu -arch=sm_90 -max_num_threads=1024 -thread_warp_size=32");
  core::RecordParser parser;
  for (const char* model : {"resnet50", "bert"}) {
    auto records = generate_candidates(model, 200, 1, hw);
    ASSERT_TRUE(records) << records.status().message();
    auto tasks = model_tasks(model);
    ASSERT_TRUE(tasks);
    std::map<std::string, int> per_task;
    for (const auto& r : *records) {
      const std::string line = core::write_record(r);
      auto parsed = parser.parse(line);
      ASSERT_TRUE(parsed) << line << ": " << parsed.status().message();
      ASSERT_EQ(*parsed, r) << line;
      EXPECT_EQ(parsed->hardware_params, hw.params);
      auto key = decode_workload_key(parsed->workload_key);
      ASSERT_TRUE(key);
      ASSERT_TRUE(gpu_from_steps(*key, parsed->steps, gpu_limits(hw.params))) << line;
      ++per_task[parsed->workload_key];
    }
    for (const Task& t : *tasks) {
      if (!gpu_supported(t.workload)) {
        EXPECT_EQ(per_task.count(encode_workload_key(t.workload)), 0u);
        continue;
      }
      EXPECT_EQ(per_task[encode_workload_key(t.workload)], 200) << encode_workload_key(t.workload);
    }
  }
}

}  // namespace
}  // namespace tcl::measure
