// The tuner's space: every mutation of every operator kind, on the CPU and on
// the GPU sketch, is a valid program different from its parent that the
// sketch decodes back; mutated CPU programs compile, run and match the
// reference (measure/'s check); features have one length per space.
#include "tuner/space.h"

#include <gtest/gtest.h>

#include "measure/measurer.h"

namespace tcl::tuner {
namespace {

using measure::OpKind;
using measure::Workload;

std::vector<Workload> cpu_workloads() {
  return {{OpKind::kMatmul, {128, 768, 768}},
          {OpKind::kBatchMatmul, {12, 128, 128, 64}},
          {OpKind::kConv2d, {1, 56, 56, 64, 64, 3, 3, 1, 1}},
          {OpKind::kDepthwiseConv2d, {1, 112, 112, 96, 3, 3, 2, 1}},
          {OpKind::kSoftmax, {1536, 128}}};
}

void check_mutations(const Space& space, int samples, int steps) {
  core::SplitMix64 rng(7);
  const std::size_t width = space.features(space.sample(rng)).size();
  int mutated = 0;
  for (int i = 0; i < samples; ++i) {
    Point p = space.sample(rng);
    for (int k = 0; k < steps; ++k) {
      auto q = space.mutate(p, rng);
      if (!q) continue;
      ++mutated;
      ASSERT_TRUE(space.validate(*q)) << space.validate(*q).message();
      ASSERT_NE(space.key(*q), space.key(p));
      auto back = space.decode(space.steps(*q));
      ASSERT_TRUE(back) << back.status().message();
      ASSERT_EQ(space.key(*back), space.key(*q));
      ASSERT_EQ(space.features(*q).size(), width);
      p = std::move(*q);  // walk: mutations of mutations
    }
  }
  // Almost every attempt finds a neighbour (a failure is rare, never the rule).
  EXPECT_GT(mutated, samples * steps * 9 / 10) << measure::encode_workload_key(space.workload());
}

TEST(SpaceTest, EveryCpuMutationIsAValidNewProgramOfTheSketch) {
  const measure::HardwareInfo hw = measure::local_hardware();
  for (const Workload& w : cpu_workloads()) {
    auto space = Space::create(w, hw);
    ASSERT_TRUE(space);
    EXPECT_FALSE(space->is_gpu());
    check_mutations(*space, 20, 25);
  }
}

TEST(SpaceTest, EveryGpuMutationIsAValidNewProgramWithinTheDevicesLimits) {
  const measure::HardwareInfo hw = measure::cuda_hardware("sm_90");
  for (const Workload& w : cpu_workloads()) {
    auto space = Space::create(w, hw);
    if (w.kind == OpKind::kSoftmax) {
      EXPECT_FALSE(space) << "the GPU sketch has no softmax";
      continue;
    }
    ASSERT_TRUE(space);
    EXPECT_TRUE(space->is_gpu());
    check_mutations(*space, 20, 25);
  }
}

TEST(SpaceTest, MutatedCpuProgramsCompileRunAndMatchTheReference) {
  // Small shapes of every kind, so that the reference check runs in seconds.
  const std::vector<Workload> small = {{OpKind::kMatmul, {16, 32, 24}},
                                       {OpKind::kBatchMatmul, {2, 8, 16, 8}},
                                       {OpKind::kConv2d, {1, 8, 8, 4, 8, 3, 3, 1, 1}},
                                       {OpKind::kDepthwiseConv2d, {1, 8, 8, 8, 3, 3, 2, 1}},
                                       {OpKind::kSoftmax, {8, 32}}};
  const measure::HardwareInfo hw = measure::local_hardware();
  std::vector<core::Record> records;
  core::SplitMix64 rng(11);
  for (const Workload& w : small) {
    auto space = Space::create(w, hw);
    ASSERT_TRUE(space);
    for (int i = 0; i < 4; ++i) {
      Point p = space->sample(rng);
      for (int k = 0; k < 3; ++k) p = space->mutate(p, rng).value_or(p);
      records.push_back(space->record(p));
    }
  }
  measure::MeasureOptions options;
  options.programs_per_unit = 64;
  options.runner.timing.repeat = 1;
  options.runner.timing.min_repeat_seconds = 0;
  measure::Measurer measurer(options);
  const std::vector<core::Record> measured = measurer.measure(records);
  ASSERT_EQ(measured.size(), records.size());
  for (std::size_t i = 0; i < measured.size(); ++i)
    EXPECT_EQ(measured[i].error_no, 0) << measured[i].workload_key << ": " << measurer.last_errors()[i];
}

TEST(SpaceTest, StepsOfAnotherSketchDoNotDecode) {
  const Workload w{OpKind::kMatmul, {64, 64, 64}};
  auto cpu = Space::create(w, measure::local_hardware());
  auto gpu = Space::create(w, measure::cuda_hardware("sm_90"));
  ASSERT_TRUE(cpu && gpu);
  core::SplitMix64 rng(3);
  EXPECT_FALSE(cpu->decode(gpu->steps(gpu->sample(rng))));
  EXPECT_FALSE(gpu->decode(cpu->steps(cpu->sample(rng))));
}

}  // namespace
}  // namespace tcl::tuner
