// Tests of core/target.h.
#include "core/target.h"

#include <gtest/gtest.h>

namespace tcl::core {
namespace {

TEST(TargetTest, ParsesOptions) {
  const TargetInfo t =
      parse_target("cuda -keys=cuda,gpu -arch=sm_75 -max_num_threads=1024 -model=2080ti -thread_warp_size=32");
  EXPECT_EQ(t.kind, "cuda");
  EXPECT_EQ(t.keys, (std::vector<std::string>{"cuda", "gpu"}));
  EXPECT_EQ(t.arch, "sm_75");
  EXPECT_EQ(t.cuda_sm(), 75);
  EXPECT_EQ(t.model, "2080ti");
  EXPECT_EQ(t.max_num_threads, 1024);
  EXPECT_EQ(t.thread_warp_size, 32);

  const TargetInfo c = parse_target(
      "llvm -keys=arm_cpu,cpu -device=arm_cpu -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod -num-cores=4");
  EXPECT_EQ(c.kind, "llvm");
  EXPECT_TRUE(c.has_key("arm_cpu"));
  EXPECT_TRUE(c.has_key("cpu"));
  EXPECT_FALSE(c.has_key("gpu"));
  EXPECT_EQ(c.device, "arm_cpu");
  EXPECT_EQ(c.mtriple, "aarch64-linux-gnu");
  EXPECT_EQ(c.mattr, (std::vector<std::string>{"+neon", "+dotprod"}));
  EXPECT_EQ(c.num_cores, 4);
}

TEST(TargetTest, DefaultKeysAndOddInput) {
  EXPECT_EQ(parse_target("llvm -mcpu=core-avx2").keys, std::vector<std::string>{"cpu"});
  EXPECT_EQ(parse_target("cuda").keys, (std::vector<std::string>{"cuda", "gpu"}));
  EXPECT_EQ(parse_target("llvm -device=arm_cpu").keys, (std::vector<std::string>{"arm_cpu", "cpu"}));
  const TargetInfo e = parse_target("");
  EXPECT_TRUE(e.kind.empty());
  EXPECT_TRUE(e.keys.empty());
  const TargetInfo odd = parse_target("  -x -= --mcpu='znver3' -arch=sm_ -num-cores=abc  ");
  EXPECT_EQ(odd.mcpu, "znver3");
  EXPECT_EQ(odd.cuda_sm(), 0);
  EXPECT_EQ(odd.num_cores, 0);
}

}  // namespace
}  // namespace tcl::core
