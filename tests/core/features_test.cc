// Tests of core/features.h: exact token slots for hand-written steps, the
// reference cross-check, padding/cutting, TLP layout and hardware descriptor.
#include "core/features.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/line_reader.h"
#include "record_printer.h"
#include "reference_features.h"

namespace tcl::core {
namespace {

namespace ts = token_slot;

std::string read_whole(const std::string& path) {
  auto r = read_file_decompressed(path);
  return r.is_ok() ? *r : std::string();
}

Record parse_ok(std::string_view line) {
  auto r = parse_record(line);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : Record{};
}

std::string with_steps(const std::string& steps) {
  return R"({"i": [["k", "llvm"], [[], )" + steps + R"(]], "r": [[1e-05], 0, 0.1, 1], "v": "v0.6"})";
}

float lg(double x) { return static_cast<float>(std::log2(1.0 + x)); }

// The kind one-hot has exactly one 1, at `kind`.
void expect_kind(const float* t, StepKind kind) {
  for (int k = 0; k < kNumStepKinds; ++k) {
    EXPECT_EQ(t[ts::kKind + k], k == static_cast<int>(kind) ? 1.0f : 0.0f) << "slot " << k;
  }
}

TEST(FeaturesTest, SplitAndFollowSplitTokens) {
  const Record r =
      parse_ok(with_steps(R"([["SP", 2, 0, 1024, [2, 1, 4], 1], ["FSP", 4, 3, 0, 2], ["FSP", 4, 1, 0, 1], )"
                          R"(["SP", 3, 5, 64, [8, 2], 0], ["FFSP", 5, 1, [0, 3], 1, 1], ["FSP", 4, 0, 9, 2]])"));
  std::vector<float> tok(8 * kTokenDim, -1.0f);
  ASSERT_EQ(encode_tokens(r.steps, 8, tok.data()), 6);

  const float* sp = tok.data();
  expect_kind(sp, StepKind::kSplit);
  EXPECT_FLOAT_EQ(sp[ts::kStage], 2.0f / 16);
  EXPECT_FLOAT_EQ(sp[ts::kIter], 0.0f);
  EXPECT_FLOAT_EQ(sp[ts::kExtent], lg(1024));
  EXPECT_FLOAT_EQ(sp[ts::kLengths + 0], lg(2));
  EXPECT_FLOAT_EQ(sp[ts::kLengths + 1], lg(1));
  EXPECT_FLOAT_EQ(sp[ts::kLengths + 2], lg(4));
  EXPECT_FLOAT_EQ(sp[ts::kLengths + 3], 0.0f);
  EXPECT_FLOAT_EQ(sp[ts::kNumLengths], 0.75f);
  EXPECT_FLOAT_EQ(sp[ts::kInnerToOuter], 1.0f);
  EXPECT_FLOAT_EQ(sp[ts::kAnnotation], 0.0f);

  // FSP n_split=2 following [2, 1, 4]: lengths [2, 1*4].
  const float* fsp = tok.data() + kTokenDim;
  expect_kind(fsp, StepKind::kFollowSplit);
  EXPECT_FLOAT_EQ(fsp[ts::kStage], 4.0f / 16);
  EXPECT_FLOAT_EQ(fsp[ts::kIter], 3.0f / 16);
  EXPECT_FLOAT_EQ(fsp[ts::kSrcStep], 0.0f);
  EXPECT_FLOAT_EQ(fsp[ts::kLengths + 0], lg(2));
  EXPECT_FLOAT_EQ(fsp[ts::kLengths + 1], lg(4));
  EXPECT_FLOAT_EQ(fsp[ts::kLengths + 2], 0.0f);
  EXPECT_FLOAT_EQ(fsp[ts::kNumLengths], 0.5f);
  // n_split=1: the product of all lengths.
  EXPECT_FLOAT_EQ(tok[2 * kTokenDim + ts::kLengths], lg(8));

  const float* sp2 = tok.data() + 3 * kTokenDim;
  EXPECT_FLOAT_EQ(sp2[ts::kInnerToOuter], 0.0f);
  EXPECT_FLOAT_EQ(sp2[ts::kIter], 5.0f / 16);

  // FFSP level 1 over steps 0 ([2,1,4]) and 3 ([8,2]): 1 * 2.
  const float* ffsp = tok.data() + 4 * kTokenDim;
  expect_kind(ffsp, StepKind::kFollowFusedSplit);
  EXPECT_FLOAT_EQ(ffsp[ts::kLengths], lg(2));
  EXPECT_FLOAT_EQ(ffsp[ts::kLevel], 1.0f / 16);
  EXPECT_FLOAT_EQ(ffsp[ts::kInnerToOuter], 1.0f);
  EXPECT_FLOAT_EQ(ffsp[ts::kListLength], lg(2));
  EXPECT_FLOAT_EQ(ffsp[ts::kNumLengths], 0.25f);

  // FSP pointing at a missing step: no lengths, no crash.
  const float* bad = tok.data() + 5 * kTokenDim;
  EXPECT_FLOAT_EQ(bad[ts::kLengths], 0.0f);
  EXPECT_FLOAT_EQ(bad[ts::kSrcStep], 9.0f / 16);

  // Padding rows are all zero (the buffer held -1 before).
  for (int k = 6 * kTokenDim; k < 8 * kTokenDim; ++k) EXPECT_EQ(tok[static_cast<std::size_t>(k)], 0.0f);
}

TEST(FeaturesTest, AnnotationPragmaCacheAndOtherTokens) {
  Record r = parse_ok(with_steps(
      R"([["AN", 1, 2, 6], ["PR", 3, 0, "auto_unroll_max_step$512"], ["PR", 3, 0, "debug_skip_region"], )"
      R"(["CHR", 2, "shared", [3, 4]], ["CHW", 6, "local"], ["CHW", 6, "global"], ["CHW", 6, "wmma.accumulator"], )"
      R"(["CA", 3, 6, 11], ["FU", 8, [1, 2, 3]], ["RE", 3, [0, 2, 1, 3]], ["SA", 2, 1, 32, 1], ["RF", 3, 2, 1], )"
      R"(["CI", 5], ["CR", 7]])"));
  // The parser rejects other kinds; a hand-built kUnknown step keeps its slot.
  Step unknown;
  unknown.stage_id = 9;
  r.steps.push_back(unknown);
  const int L = 20;
  std::vector<float> tok(static_cast<std::size_t>(L) * kTokenDim);
  ASSERT_EQ(encode_tokens(r.steps, L, tok.data()), 15);
  auto row = [&](int i) { return tok.data() + static_cast<std::size_t>(i) * kTokenDim; };

  expect_kind(row(0), StepKind::kAnnotation);
  EXPECT_FLOAT_EQ(row(0)[ts::kIter], 2.0f / 16);
  for (int a = 0; a < kNumAnnotations; ++a) {
    EXPECT_EQ(row(0)[ts::kAnnotation + a], a == 6 ? 1.0f : 0.0f) << a;  // threadIdx.x
  }
  EXPECT_FLOAT_EQ(row(1)[ts::kPragmaUnroll], lg(512));
  EXPECT_FLOAT_EQ(row(1)[ts::kPragmaOther], 0.0f);
  EXPECT_FLOAT_EQ(row(2)[ts::kPragmaUnroll], 0.0f);
  EXPECT_FLOAT_EQ(row(2)[ts::kPragmaOther], 1.0f);

  expect_kind(row(3), StepKind::kCacheRead);
  EXPECT_FLOAT_EQ(row(3)[ts::kScope + 0], 1.0f);
  EXPECT_FLOAT_EQ(row(3)[ts::kTargetStage], 3.0f / 16);
  EXPECT_FLOAT_EQ(row(3)[ts::kListLength], lg(2));
  EXPECT_FLOAT_EQ(row(4)[ts::kScope + 1], 1.0f);
  EXPECT_FLOAT_EQ(row(5)[ts::kScope + 2], 1.0f);
  EXPECT_FLOAT_EQ(row(6)[ts::kScope + 3], 1.0f);
  EXPECT_FLOAT_EQ(row(6)[ts::kScope + 0] + row(6)[ts::kScope + 1] + row(6)[ts::kScope + 2], 0.0f);

  EXPECT_FLOAT_EQ(row(7)[ts::kTargetStage], 6.0f / 16);
  EXPECT_FLOAT_EQ(row(7)[ts::kTargetIter], 11.0f / 16);
  EXPECT_FLOAT_EQ(row(8)[ts::kIter], 1.0f / 16);  // first fused id
  EXPECT_FLOAT_EQ(row(8)[ts::kListLength], lg(3));
  EXPECT_FLOAT_EQ(row(9)[ts::kListLength], lg(4));
  EXPECT_FLOAT_EQ(row(10)[ts::kAlignFactor], lg(32));
  EXPECT_FLOAT_EQ(row(10)[ts::kAlignOffset], lg(1));
  EXPECT_FLOAT_EQ(row(11)[ts::kRfactorIter], 1.0f / 16);
  expect_kind(row(12), StepKind::kComputeInline);
  EXPECT_FLOAT_EQ(row(12)[ts::kStage], 5.0f / 16);
  expect_kind(row(13), StepKind::kComputeRoot);
  expect_kind(row(14), StepKind::kUnknown);
  EXPECT_FLOAT_EQ(row(14)[ts::kStage], 9.0f / 16);
  // Every slot outside the kind one-hot and stage of CI is zero.
  for (int k = 0; k < kTokenDim; ++k) {
    if (k == ts::kKind + static_cast<int>(StepKind::kComputeInline) || k == ts::kStage) continue;
    EXPECT_EQ(row(12)[k], 0.0f) << k;
  }
}

TEST(FeaturesTest, BatchCutsPadsAndMasks) {
  std::vector<Record> rs = {
      parse_ok(with_steps(R"([["CI", 1], ["CI", 2], ["CI", 3], ["CI", 4], ["CI", 5]])")),
      parse_ok(with_steps(R"([["CR", 1]])")),
      parse_ok(with_steps(R"([])")),
  };
  const int L = 3;
  std::vector<float> tok(rs.size() * L * kTokenDim, 7.0f);
  std::vector<float> mask(rs.size() * L, 7.0f);
  std::vector<std::int32_t> len(rs.size(), -1);
  encode_tokens_batch(rs, L, tok.data(), mask.data(), len.data());
  EXPECT_EQ(len, (std::vector<std::int32_t>{3, 1, 0}));
  EXPECT_EQ(mask, (std::vector<float>{1, 1, 1, 1, 0, 0, 0, 0, 0}));
  // The first record keeps its first 3 steps (stage ids 1, 2, 3).
  EXPECT_FLOAT_EQ(tok[0 * kTokenDim + ts::kStage], 1.0f / 16);
  EXPECT_FLOAT_EQ(tok[2 * kTokenDim + ts::kStage], 3.0f / 16);
  for (std::size_t k = (L + 1) * kTokenDim; k < tok.size(); ++k) EXPECT_EQ(tok[k], 0.0f) << k;
}

TEST(FeaturesTest, MatchesReferenceOnRealRecords) {
  const std::string dir = std::string(TCL_SOURCE_DIR) + "/../shared/data/formats/";
  for (const char* name :
       {"resnet-18-NHWC-B1-cuda.json", "resnet-50-NHWC-B1-llvm.json", "conv2d.json", "v0.2-op-subgraph-gpu.json"}) {
    auto text = read_whole(dir + name);
    ASSERT_FALSE(text.empty()) << "missing test data " << dir << name
                               << " (expected ../shared/data next to the repository)";
    std::size_t pos = 0;
    int checked = 0;
    while (pos < text.size()) {
      std::size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      const std::string_view line(text.data() + pos, nl - pos);
      pos = nl + 1;
      if (is_skippable_line(line)) continue;
      const Record r = parse_ok(line);
      const auto doc = boost::json::parse(line);
      const auto& steps = doc.at("i").as_array()[1].as_array()[1].as_array();
      for (int L : {kDefaultMaxSteps, 16}) {
        std::vector<float> got(static_cast<std::size_t>(L) * kTokenDim);
        encode_tokens(r.steps, L, got.data());
        const std::vector<float> want = testing::reference_tokens(steps, L);
        for (std::size_t k = 0; k < got.size(); ++k) {
          ASSERT_NEAR(got[k], want[k], 1e-5) << name << " token " << k / kTokenDim << " slot " << k % kTokenDim;
        }
      }
      ++checked;
    }
    EXPECT_GT(checked, 0) << name;
  }
}

TEST(FeaturesTest, TlpLayout) {
  const Record r = parse_ok(with_steps(
      R"([["SP", 2, 0, 1024, [2, 1, 4], 1], ["PR", 2, 0, "auto_unroll_max_step$64"], ["CHW", 3, "local"], )"
      R"(["CHR", 1, "shared", [3]], ["FFSP", 4, 0, [0], 1, 1], ["RE", 2, [20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32]]])"));
  std::vector<float> cpu(static_cast<std::size_t>(kTlpCpu.seq_len) * kTlpCpu.emb_size, 9.0f);
  ASSERT_EQ(encode_tlp(r.steps, kTlpCpu, cpu.data()), 6);
  auto row = [&](int i) { return cpu.data() + static_cast<std::size_t>(i) * kTlpCpu.emb_size; };
  // SP: one-hot slot 0 of the CPU vocabulary, then 2, 0, 1024, 2, 1, 4, 1.
  EXPECT_EQ(row(0)[0], 1.0f);
  for (int k = 1; k < kTlpKindSlots; ++k) EXPECT_EQ(row(0)[k], 0.0f);
  const float sp_args[] = {2, 0, 1024, 2, 1, 4, 1};
  for (int k = 0; k < 7; ++k) EXPECT_EQ(row(0)[kTlpKindSlots + k], sp_args[k]) << k;
  EXPECT_EQ(row(0)[kTlpKindSlots + 7], 0.0f);
  // PR: slot 7, args stage, iter, index of 64 in {0,16,64,512,1024} (1-based) = 3.
  EXPECT_EQ(row(1)[7], 1.0f);
  EXPECT_EQ(row(1)[kTlpKindSlots + 2], 3.0f);
  // CHW local -> 1 (slot 10 on CPU).
  EXPECT_EQ(row(2)[10], 1.0f);
  EXPECT_EQ(row(2)[kTlpKindSlots + 1], 1.0f);
  // CHR and FFSP are outside the CPU vocabulary: zero one-hot, arguments kept.
  for (int k = 0; k < kTlpKindSlots; ++k) EXPECT_EQ(row(3)[k], 0.0f);
  EXPECT_EQ(row(3)[kTlpKindSlots + 0], 1.0f);  // stage
  EXPECT_EQ(row(3)[kTlpKindSlots + 1], 1.0f);  // shared
  EXPECT_EQ(row(3)[kTlpKindSlots + 2], 3.0f);  // reader
  // RE with 13 ids is cut at emb_size (22 = 11 + stage + 10 ids).
  EXPECT_EQ(row(5)[kTlpCpu.emb_size - 1], 29.0f);
  // Padding rows are zero.
  for (int i = 6; i < kTlpCpu.seq_len; ++i) {
    for (int k = 0; k < kTlpCpu.emb_size; ++k) ASSERT_EQ(row(i)[k], 0.0f);
  }
  // GPU vocabulary: CHR slot 8, FFSP slot 9; 40 x 20.
  std::vector<float> gpu(static_cast<std::size_t>(kTlpGpu.seq_len) * kTlpGpu.emb_size);
  encode_tlp(r.steps, kTlpGpu, gpu.data());
  EXPECT_EQ(gpu[3 * 20 + 8], 1.0f);
  EXPECT_EQ(gpu[4 * 20 + 9], 1.0f);
  EXPECT_EQ(gpu[0 * 20 + 17], 1.0f);   // SP: 7 arguments fit
  EXPECT_EQ(gpu[5 * 20 + 19], 27.0f);  // RE cut at 20 = 11 + stage + 8 ids
}

TEST(FeaturesTest, HardwareDescriptor) {
  float cpu[kHardwareDim];
  encode_hardware(HardwareParams{24, 64, 64, 0, 0, 0, 0, 0}, "llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu", cpu);
  EXPECT_FLOAT_EQ(cpu[0], lg(24) / 8);
  EXPECT_FLOAT_EQ(cpu[1], lg(64) / 8);
  EXPECT_EQ(cpu[8], 1.0f);
  EXPECT_EQ(cpu[9], 1.0f);   // key cpu
  EXPECT_EQ(cpu[10], 0.0f);  // not gpu
  EXPECT_EQ(cpu[12], 1.0f);  // llvm
  EXPECT_EQ(cpu[19], 1.0f);  // x86
  EXPECT_EQ(cpu[22], 0.0f);
  EXPECT_FLOAT_EQ(cpu[30], lg(24) / 8);
  EXPECT_FLOAT_EQ(cpu[34], lg(64) / 8);  // vector bytes from hardware params
  EXPECT_EQ(cpu[35], 0.0f);              // no -mcpu

  float gpu[kHardwareDim];
  encode_hardware(HardwareParams{-1, 16, 64, 49152, 2147483647, 1024, 8, 32},
                  "cuda -keys=cuda,gpu -arch=sm_75 -max_num_threads=1024 -model=2080ti -thread_warp_size=32", gpu);
  EXPECT_EQ(gpu[0], 0.0f);  // -1 cores: unknown
  EXPECT_FLOAT_EQ(gpu[3], lg(49152) / 20);
  EXPECT_FLOAT_EQ(gpu[7], lg(32) / 8);
  EXPECT_EQ(gpu[9], 0.0f);
  EXPECT_EQ(gpu[10], 1.0f);
  EXPECT_EQ(gpu[13], 1.0f);  // cuda
  EXPECT_EQ(gpu[22], 1.0f);  // nvptx
  EXPECT_FLOAT_EQ(gpu[29], 0.75f);
  EXPECT_FLOAT_EQ(gpu[31], lg(32) / 8);
  EXPECT_FLOAT_EQ(gpu[33], lg(1024) / 12);
  EXPECT_EQ(gpu[35], 1.0f);

  // No hardware params (v0.2): the target string alone.
  float v2[kHardwareDim];
  encode_hardware(std::nullopt, "llvm -mcpu=skylake-avx512 -num-cores=16", v2);
  EXPECT_EQ(v2[8], 0.0f);
  EXPECT_EQ(v2[23], 1.0f);  // avx2
  EXPECT_EQ(v2[24], 1.0f);  // avx512
  EXPECT_FLOAT_EQ(v2[30], lg(16) / 8);
  EXPECT_FLOAT_EQ(v2[34], lg(64) / 8);  // implied by avx512

  float arm[kHardwareDim];
  encode_hardware(std::nullopt,
                  "llvm -keys=arm_cpu,cpu -device=arm_cpu -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod", arm);
  EXPECT_EQ(arm[11], 1.0f);
  EXPECT_EQ(arm[19], 0.0f);
  EXPECT_EQ(arm[20], 1.0f);
  EXPECT_EQ(arm[25], 1.0f);  // neon
  EXPECT_EQ(arm[27], 1.0f);  // dot product

  // Everything is finite and within [0, 1.5] for these targets.
  for (const float* d : {cpu, gpu, v2, arm}) {
    for (int k = 0; k < kHardwareDim; ++k) {
      EXPECT_TRUE(std::isfinite(d[k]));
      EXPECT_GE(d[k], 0.0f);
      EXPECT_LE(d[k], 1.5f);
    }
  }
}

// The target kind as nearness: the CPUs are one kind, the two GPUs (TVM's
// 2080 Ti target and the V100's, which names no -arch) another.
TEST(FeaturesTest, SameTargetKind) {
  const auto descriptor = [](std::string_view target) {
    std::vector<float> d(kHardwareDim);
    encode_hardware(std::nullopt, target, d.data());
    return d;
  };
  const std::vector<float> x86 = descriptor("llvm -keys=cpu -mcpu=core-avx2 -num-cores=24");
  const std::vector<float> arm = descriptor("llvm -keys=arm_cpu,cpu -device=arm_cpu -mtriple=aarch64-linux-gnu");
  const std::vector<float> ti = descriptor("cuda -keys=cuda,gpu -arch=sm_75 -model=2080ti -thread_warp_size=32");
  const std::vector<float> v100 = descriptor("cuda -keys=cuda,gpu -max_num_threads=1024 -thread_warp_size=32");
  EXPECT_TRUE(same_target_kind(x86, arm));
  EXPECT_TRUE(same_target_kind(ti, v100));
  EXPECT_FALSE(same_target_kind(x86, ti));
  EXPECT_FALSE(same_target_kind(v100, arm));
  std::vector<float> slotted = ti;  // bench_continual's --platform-slots appends floats
  slotted.push_back(1.0f);
  EXPECT_TRUE(same_target_kind(slotted, v100));
  EXPECT_FALSE(same_target_kind(std::span<const float>(ti).first(12), ti));  // too short to say
}

TEST(FeaturesTest, WorkloadToken) {
  namespace ws = workload_slot;
  // A relay key: a DAG hash, then tensor shapes (the last one the output).
  float relay[kTokenDim];
  encode_workload(R"(["07f9fc", [1, 14, 14, 256], [3, 3, 256, 512], [1, 1, 1, 512], [1, 7, 7, 512]])", relay);
  for (int k = 0; k < kNumStepKinds; ++k) EXPECT_EQ(relay[ts::kKind + k], 0.0f) << k;  // no step kind
  EXPECT_FLOAT_EQ(relay[ws::kTensors], 4.0f / 8);
  EXPECT_EQ(relay[ws::kScalars], 0.0f);
  EXPECT_FLOAT_EQ(relay[ws::kElements], lg(14 * 14 * 256) / 32);
  EXPECT_FLOAT_EQ(relay[ws::kElements + 1], lg(3 * 3 * 256 * 512) / 32);
  EXPECT_FLOAT_EQ(relay[ws::kElements + 3], lg(7 * 7 * 512) / 32);
  EXPECT_EQ(relay[ws::kElements + 4], 0.0f);  // only 4 tensors
  EXPECT_FLOAT_EQ(relay[ws::kRanks], 4.0f / 8);
  EXPECT_FLOAT_EQ(relay[ws::kLastDims + 1], lg(7) / 16);  // the output's dims
  EXPECT_FLOAT_EQ(relay[ws::kLastDims + 3], lg(512) / 16);
  EXPECT_EQ(relay[ws::kLastDims + 4], 0.0f);
  EXPECT_FLOAT_EQ(relay[ws::kFirstDims + 3], lg(256) / 16);  // the first tensor's
  EXPECT_FLOAT_EQ(relay[ws::kSize], lg(14 * 14 * 256 + 3 * 3 * 256 * 512 + 512 + 7 * 7 * 512) / 32);

  // A named key: scalars; strings and booleans are skipped.
  float named[kTokenDim];
  encode_workload(R"(["conv2d_layer", 128, 1008, 21, 21, 168, 1, 1, 1, "SAME"])", named);
  EXPECT_EQ(named[ws::kTensors], 0.0f);
  EXPECT_FLOAT_EQ(named[ws::kScalars], 8.0f / 8);
  EXPECT_FLOAT_EQ(named[ws::kScalarValues], lg(128) / 16);
  EXPECT_FLOAT_EQ(named[ws::kScalarValues + 4], lg(168) / 16);
  EXPECT_FLOAT_EQ(named[ws::kSize], lg(128.0 * 1008 * 21 * 21 * 168) / 32);
  float mixed[kTokenDim];
  encode_workload(R"(["reduction_layer", [128, 2048, 7, 7], [2, 3], false])", mixed);
  EXPECT_FLOAT_EQ(mixed[ws::kTensors], 2.0f / 8);
  EXPECT_EQ(mixed[ws::kScalars], 0.0f);
  EXPECT_FLOAT_EQ(mixed[ws::kLastDims + 1], lg(3) / 16);

  // Not a JSON array, or no usable argument: all zero.
  float bad[kTokenDim];
  for (const char* key : {"k", "{\"a\": 1}", "[\"x\", [1, \"y\"]]"}) {
    encode_workload(key, bad);
    for (int k = 0; k < kTokenDim; ++k) EXPECT_EQ(bad[k], 0.0f) << key << " slot " << k;
  }
  for (const float* t : {relay, named, mixed}) {
    for (int k = 0; k < kTokenDim; ++k) {
      EXPECT_GE(t[k], 0.0f);
      EXPECT_LE(t[k], 1.5f);
    }
  }
}

}  // namespace
}  // namespace tcl::core
