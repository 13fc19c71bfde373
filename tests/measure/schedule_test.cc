#include "measure/schedule.h"

#include <gtest/gtest.h>

#include <set>

#include "measure/candidates.h"
#include "measure/codegen_cpu.h"
#include "measure/hardware.h"

namespace tcl::measure {
namespace {

const Workload kWorkloads[] = {{OpKind::kMatmul, {128, 768, 3072}},
                               {OpKind::kBatchMatmul, {12, 128, 64, 128}},
                               {OpKind::kConv2d, {1, 56, 56, 64, 64, 3, 3, 1, 1}},
                               {OpKind::kDepthwiseConv2d, {1, 112, 112, 96, 3, 3, 2, 1}},
                               {OpKind::kSoftmax, {1536, 128}}};

std::string steps_text(const std::vector<core::Step>& steps) {
  std::string s;
  core::write_steps(steps, &s);
  return s;
}

TEST(ScheduleTest, StepsDecodeBackToTheSameSchedule) {
  for (const auto& w : kWorkloads) {
    core::SplitMix64 rng(7);
    for (int i = 0; i < 200; ++i) {
      const Schedule s = sample_schedule(w, 16, rng);
      ASSERT_TRUE(validate(w, s)) << encode_workload_key(w);
      const auto steps = to_steps(w, s);
      auto back = from_steps(w, steps);
      ASSERT_TRUE(back) << encode_workload_key(w) << " " << steps_text(steps) << ": " << back.status().message();
      EXPECT_EQ(*back, s) << steps_text(steps);
    }
  }
}

TEST(ScheduleTest, RecordsRoundTripThroughCore) {
  const HardwareInfo hw = local_hardware();
  core::RecordParser parser;
  for (const auto& w : kWorkloads) {
    const auto records = workload_candidates(w, 20, 3, hw);
    ASSERT_EQ(records.size(), 20u);
    for (const auto& r : records) {
      const std::string line = core::write_record(r);
      auto parsed = parser.parse(line);
      ASSERT_TRUE(parsed) << line << ": " << parsed.status().message();
      EXPECT_EQ(*parsed, r) << line;
      EXPECT_EQ(core::classify(*parsed), core::RecordClass::kCandidate);
      auto key = decode_workload_key(parsed->workload_key);
      ASSERT_TRUE(key);
      EXPECT_TRUE(from_steps(*key, parsed->steps)) << line;
    }
  }
}

TEST(ScheduleTest, CandidatesAreDeterministicAndDistinct) {
  const HardwareInfo hw = local_hardware();
  auto a = generate_candidates("bert", 8, 42, hw);
  auto b = generate_candidates("bert", 8, 42, hw);
  auto c = generate_candidates("bert", 8, 43, hw);
  ASSERT_TRUE(a && b && c);
  ASSERT_EQ(a->size(), b->size());
  std::set<std::string> distinct, other;
  for (std::size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].steps, (*b)[i].steps);
    distinct.insert((*a)[i].workload_key + steps_text((*a)[i].steps));
    other.insert((*c)[i].workload_key + steps_text((*c)[i].steps));
  }
  EXPECT_EQ(distinct.size(), a->size());
  EXPECT_NE(distinct, other);
  EXPECT_EQ(a->front().target, hw.target);
  EXPECT_EQ(a->front().hardware_params->num_cores, hw.num_cores);
}

// The steps read like Ansor's own CPU records (stage ids after the cache
// write, iterator positions after the splits, SSRSRS reorder).
TEST(ScheduleTest, ConvolutionStepsLookLikeAnsors) {
  const Workload w{OpKind::kConv2d, {1, 56, 56, 64, 64, 3, 3, 1, 1}};
  Schedule s;
  s.cache_write = true;
  s.spatial_tiles = {{1, 1, 1}, {2, 1, 7}, {1, 2, 4}, {2, 4, 8}};
  s.reduce_tiles = {3, 1, 8};
  s.spatial_order = {0, 1, 2, 3};
  s.reduce_order = {0, 1, 2};
  s.parallel_levels = 1;
  s.inline_pad = true;
  s.vectorize = true;
  s.auto_unroll_max_step = 64;
  EXPECT_EQ(steps_text(to_steps(w, s)),
            R"([["CI",1],["CHW",3,"local"],["SP",3,0,1,[1,1,1],1],["SP",3,4,56,[2,1,7],1],["SP",3,8,56,[1,2,4],1],)"
            R"(["SP",3,12,64,[2,4,8],1],["SP",3,16,3,[3],1],["SP",3,18,3,[1],1],["SP",3,20,64,[8],1],)"
            R"(["RE",3,[0,4,8,12,1,5,9,13,16,18,20,2,6,10,14,17,19,21,3,7,11,15]],["FSP",4,0,2,2],["FSP",4,3,3,2],)"
            R"(["FSP",4,6,4,2],["FSP",4,9,5,2],["RE",4,[0,3,6,9,1,4,7,10,2,5,8,11]],["CA",3,4,7],)"
            R"(["FU",4,[0,1,2,3]],["AN",4,0,3],["PR",3,0,"auto_unroll_max_step$64"],["AN",3,21,2],["AN",4,8,2]])");
}

TEST(ScheduleTest, ConvolutionsWithoutPaddingReadTheInputWithoutABoundsCheck) {
  // A pad of 0 puts every tap inside the input: the innermost loop loads it directly, as TVM's pad
  // stage of 0 does; a pad of 1 keeps the check (`... < Hu && ... < Wu ? in0[...] : 0.0f`).
  core::SplitMix64 rng(3);
  for (const std::int64_t pad : {0, 1}) {
    const Workload w{OpKind::kConv2d, {1, 14, 14, 32, 32, 3, 3, 1, pad}};
    int inline_pads = 0;
    for (int i = 0; i < 20; ++i) {
      const Schedule s = sample_schedule(w, 16, rng);
      if (!s.inline_pad) continue;
      ++inline_pads;
      const std::string source = generate_cpu_source(w, s, "f");
      EXPECT_EQ(source.find("u ? in0[") != std::string::npos, pad == 1) << source;
    }
    EXPECT_GT(inline_pads, 0);
  }
}

TEST(ScheduleTest, ForeignStepsAreNotInTheSpace) {
  const Workload w{OpKind::kMatmul, {64, 64, 64}};
  core::Step fu;
  fu.kind = core::StepKind::kFuse;
  fu.stage_id = 2;
  fu.ids = {0, 1};
  EXPECT_FALSE(from_steps(w, {fu}));
  core::SplitMix64 rng(1);
  auto steps = to_steps(w, sample_schedule(w, 16, rng));
  steps[0].lengths.push_back(3);  // a split that no longer divides / has the wrong arity
  EXPECT_FALSE(from_steps(w, steps));
}

}  // namespace
}  // namespace tcl::measure
