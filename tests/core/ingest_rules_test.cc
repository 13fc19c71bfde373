// Tests of core/ingest_rules.h: each rule an uploaded line must pass, in its
// own words, and the reason names that are metric labels.
#include "core/ingest_rules.h"

#include <gtest/gtest.h>

#include <string>

namespace tcl::core {
namespace {

const Platform kX16{"llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu", HardwareParams{16, 64, 64, 0, 0, 0, 0, 0}};

TEST(IngestRulesTest, ReasonNamesAreTheMetricLabels) {
  EXPECT_EQ(reject_reason_name(RejectReason::kLineTooLong), "line_too_long");
  EXPECT_EQ(reject_reason_name(RejectReason::kInvalidRecord), "invalid_record");
  EXPECT_EQ(reject_reason_name(RejectReason::kUnmeasured), "unmeasured");
  EXPECT_EQ(reject_reason_name(RejectReason::kHardwareMismatch), "hardware_mismatch");
  EXPECT_EQ(reject_reason_name(RejectReason::kTargetMismatch), "target_mismatch");
  EXPECT_EQ(static_cast<int>(RejectReason::kTargetMismatch), kRejectReasons - 1);
}

TEST(IngestRulesTest, AMeasurementNeedsACost) {
  Record r;
  r.costs = {0.0};
  EXPECT_EQ(unmeasured_measurement(r), "record is unmeasured (no costs, or all costs 0); upload it as a candidate");
  r.costs = {1e-3};
  EXPECT_EQ(unmeasured_measurement(r), "");
  r.costs = {};
  r.error_no = 4;  // a failed measurement is a measurement
  EXPECT_EQ(unmeasured_measurement(r), "");
}

TEST(IngestRulesTest, HardwareMismatchNamesTheFirstParamThatDiffers) {
  EXPECT_EQ(hardware_mismatch(kX16, "x16", HardwareParams{16, 64, 64, 0, 0, 0, 0, 0}), "");
  EXPECT_EQ(hardware_mismatch(kX16, "x16", HardwareParams{16, 64, 64, 0, 0, 0, 0, 32}),
            "hardware_params.warp_size is 32 but platform 'x16' has 0");
  EXPECT_EQ(hardware_mismatch(kX16, "x16", HardwareParams{8, 32, 64, 0, 0, 0, 0, 0}),
            "hardware_params.num_cores is 8 but platform 'x16' has 16");
  EXPECT_EQ(hardware_mismatch(Platform{"llvm", std::nullopt}, "any", HardwareParams{1, 2, 3, 4, 5, 6, 7, 8}), "");
}

TEST(IngestRulesTest, TargetMismatchIsKindMcpuOrArch) {
  EXPECT_EQ(target_mismatch(kX16, "x16", ""), "");
  EXPECT_EQ(target_mismatch(kX16, "x16", "llvm -keys=cpu -mcpu=skylake"), "");  // the platform names no -mcpu
  EXPECT_EQ(target_mismatch(kX16, "x16", "cuda -arch=sm_80"),
            "target kind 'cuda' does not match platform 'x16' (llvm)");
  const Platform skylake{"llvm -keys=cpu -mcpu=skylake", kX16.hardware};
  EXPECT_EQ(target_mismatch(skylake, "s", "llvm -mcpu=znver3"),
            "target -mcpu=znver3 does not match platform 's' (-mcpu=skylake)");
  const Platform sm75{"cuda -arch=sm_75", std::nullopt};
  EXPECT_EQ(target_mismatch(sm75, "t4", "cuda -arch=sm_80"),
            "target -arch=sm_80 does not match platform 't4' (-arch=sm_75)");
  EXPECT_EQ(target_mismatch(sm75, "t4", "cuda -arch=sm_75"), "");
}

TEST(IngestRulesTest, UnstorableKeysAndTimestamps) {
  Record r;
  r.timestamp = 1727494472;
  EXPECT_EQ(unstorable(r, "[\"k\"]"), "");
  EXPECT_EQ(unstorable(r, ""), "workload_key is empty once whitespace outside its strings is removed");
  EXPECT_EQ(unstorable(r, std::string(kMaxWorkloadKeyBytes, 'k')), "");
  EXPECT_EQ(unstorable(r, std::string(kMaxWorkloadKeyBytes + 1, 'k')),
            "workload_key is 2001 bytes; at most 2000 are stored");
  r.timestamp = 9223372036854775808.0;  // 2^63: past int64
  EXPECT_EQ(unstorable(r, "k"), "timestamp is out of range");
}

}  // namespace
}  // namespace tcl::core
