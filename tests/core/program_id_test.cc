// Tests of core/program_id.h: the id ignores the target and formatting, and
// changes with the workload or any step.
#include "core/program_id.h"

#include <gtest/gtest.h>

#include <string>

#include "record_printer.h"

namespace tcl::core {
namespace {

Record parse_ok(std::string_view line) {
  auto r = parse_record(line);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : Record{};
}

constexpr const char* kCpu =
    R"({"i": [["[\"abc\", 1, [2, 3]]", "llvm -keys=cpu -mcpu=core-avx2", [24, 64, 64, 0, 0, 0, 0, 0], "", 2, []], )"
    R"([[], [["SP", 2, 0, 1024, [2, 1, 4], 1], ["AN", 2, 0, 3], ["CHR", 1, "shared", [2]]]]], )"
    R"("r": [[1e-05], 0, 0.1, 1], "v": "v0.6"})";

TEST(ProgramIdTest, IgnoresTargetAndMeasurement) {
  const Record cpu = parse_ok(kCpu);
  const Record gpu = parse_ok(
      R"({"i": [["[\"abc\", 1, [2, 3]]", "cuda -keys=cuda,gpu -arch=sm_75", [-1, 16, 64, 49152, 2147483647, 1024, 8, 32], "", 0, []], )"
      R"([[], [["SP", 2, 0, 1024, [2, 1, 4], 1], ["AN", 2, 0, 3], ["CHR", 1, "shared", [2]]]]], )"
      R"("r": [[5e-06, 6e-06], 1, 3.5, 99], "v": "v0.6"})");
  const std::string id = program_id(cpu);
  EXPECT_EQ(id.size(), kProgramIdSize);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(program_id(gpu), id);
}

TEST(ProgramIdTest, IgnoresWhitespaceAndFormatting) {
  const Record a = parse_ok(kCpu);
  const Record b = parse_ok(R"({"v":"v0.2","r":[[2e-05],0,0.1,1],"i":[["[\"abc\",1,[2,3]]","llvm"],)"
                            R"([[],[ ["SP",2,0,1024,[2,1,4],true] ,["AN",2,0,3],[ "CHR",1, "shared",[ 2 ]]]]]})");
  EXPECT_EQ(program_id(a), program_id(b));
  EXPECT_EQ(canonical_workload_key("[\"abc\", 1, [2, 3]]"), "[\"abc\",1,[2,3]]");
  // Whitespace inside string literals is content, and escapes are respected.
  EXPECT_EQ(canonical_workload_key("[\"a b\\\" c\", 1]"), "[\"a b\\\" c\",1]");
}

TEST(ProgramIdTest, ChangesWithWorkloadOrAnyStep) {
  const Record base = parse_ok(kCpu);
  const std::string id = program_id(base);
  Record r = base;
  r.workload_key = "[\"abd\", 1, [2, 3]]";
  EXPECT_NE(program_id(r), id);
  r = base;
  r.steps[0].lengths[2] = 8;
  EXPECT_NE(program_id(r), id);
  r = base;
  r.steps[1].annotation = 2;
  EXPECT_NE(program_id(r), id);
  r = base;
  std::swap(r.steps[0], r.steps[1]);
  EXPECT_NE(program_id(r), id);
  r = base;
  r.steps.pop_back();
  EXPECT_NE(program_id(r), id);
}

TEST(ProgramIdTest, CanonicalFormIsStable) {
  // Ids are stored: this golden value must never change (canonical form v1).
  const Record r = parse_ok(kCpu);
  std::string text;
  canonical_program(r.workload_key, r.steps, &text);
  EXPECT_EQ(text,
            "tcl-program-v1\n[\"abc\",1,[2,3]]\n"
            R"([["SP",2,0,1024,[2,1,4],1],["AN",2,0,3],["CHR",1,"shared",[2]]])");
  EXPECT_EQ(program_id(r), "0282f498e5f74577e4f4b83064a64d14f4e6895fdd1fd1534a60cfa9abee2b84");
}

}  // namespace
}  // namespace tcl::core
