// tests/bench/distill_levers_test.cc — the benches' distillation levers
// (bench/lib/distill_levers.h): the old KD's factors on the new platform's
// programs by target kind.
#include "bench/lib/distill_levers.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "core/features.h"

namespace tcl::bench {
namespace {

// The old KD on the new platform's programs by target kind: CPUs keep it
// when a CPU arrives, lose it to `other_kind` when a GPU does, and the GPU
// old platform keeps it when a second GPU arrives.
TEST(DistillLeversTest, OldWeightOnNewProgramsByTargetKind) {
  const auto descriptor = [](const char* target) {
    std::vector<float> d(core::kHardwareDim);
    core::encode_hardware(std::nullopt, target, d.data());
    return d;
  };
  const std::vector<float> x86 = descriptor("llvm -keys=cpu -mcpu=core-avx2 -num-cores=24");
  const std::vector<float> x86_16 = descriptor("llvm -keys=cpu -mcpu=skylake-avx512 -num-cores=16");
  const std::vector<float> ti = descriptor("cuda -keys=cuda,gpu -arch=sm_75 -model=2080ti");
  const std::vector<float> v100 = descriptor("cuda -keys=cuda,gpu -max_num_threads=1024");
  EXPECT_TRUE(old_weight_on_new_programs(x86_16, {x86}, 0.0).empty());  // all 1: nothing to say
  EXPECT_EQ(old_weight_on_new_programs(ti, {x86, x86_16}, 0.0), (std::vector<double>{0.0, 0.0}));
  EXPECT_EQ(old_weight_on_new_programs(v100, {x86, x86_16, ti}, 0.25), (std::vector<double>{0.25, 0.25, 1.0}));
  EXPECT_TRUE(old_weight_on_new_programs(v100, {x86, ti}, 1.0).empty());  // 1: as the job
  // The same kind's factor: the old GPU's KD leaves the new GPU's programs, the CPUs' stays.
  EXPECT_EQ(old_weight_on_new_programs(v100, {x86, ti}, 1.0, 0.0), (std::vector<double>{1.0, 0.0}));
  EXPECT_EQ(old_weight_on_new_programs(v100, {x86, ti}, 0.5, 0.0), (std::vector<double>{0.5, 0.0}));
}

}  // namespace
}  // namespace tcl::bench
