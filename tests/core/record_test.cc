// Tests of core/record.h: parsing every step kind and record version, the
// writer round trip, classification and the reasons given for malformed lines.
#include "core/record.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "record_printer.h"

namespace tcl::core {
namespace {

// One record with every step kind (TVM field order).
constexpr const char* kAllKinds =
    R"({"i": [["[\"abc\", 1, 64]", "llvm -keys=cpu -mcpu=core-avx2", [24, 64, 64, 0, 0, 0, 0, 0], "", 2, ["w"]], )"
    R"([[], [["AN", 1, 2, 3], ["FU", 2, [0, 1, 2]], ["PR", 3, 0, "auto_unroll_max_step$64"], )"
    R"(["RE", 4, [2, 0, 1]], ["SP", 5, 1, 1024, [2, 1, 4], 1], ["FSP", 6, 0, 4, 2], )"
    R"(["FFSP", 7, 1, [4, 4], 1, 0], ["SA", 8, 2, 32, 1], ["CA", 9, 10, 3], ["CI", 11], ["CR", 12], )"
    R"(["CHR", 13, "shared", [14, 15]], ["CHW", 16, "local"], ["RF", 17, 2, 1]]]], )"
    R"("r": [[1.5e-05, 2e-05], 0, 0.25, 1754209236], "v": "v0.6"})";

Record parse_ok(std::string_view line) {
  RecordParser p;
  Record r;
  Status s = p.parse(line, &r);
  EXPECT_TRUE(s.is_ok()) << s.to_string() << "\n" << line;
  return r;
}

TEST(RecordTest, ParsesEveryStepKindInTvmFieldOrder) {
  const Record r = parse_ok(kAllKinds);
  EXPECT_EQ(r.workload_key, "[\"abc\", 1, 64]");
  EXPECT_EQ(r.target, "llvm -keys=cpu -mcpu=core-avx2");
  ASSERT_TRUE(r.hardware_params.has_value());
  EXPECT_EQ(r.hardware_params->num_cores, 24);
  EXPECT_EQ(r.hardware_params->cache_line_bytes, 64);
  EXPECT_EQ(r.target_host, "");
  EXPECT_EQ(r.layout_rewrite, 2);
  EXPECT_EQ(r.task_input_names, std::vector<std::string>{"w"});
  EXPECT_EQ(r.version, "v0.6");
  EXPECT_EQ(r.costs, (std::vector<double>{1.5e-05, 2e-05}));
  EXPECT_EQ(r.error_no, 0);
  EXPECT_EQ(r.all_cost, 0.25);
  EXPECT_EQ(r.timestamp, 1754209236.0);
  ASSERT_EQ(r.steps.size(), 14u);

  const auto& s = r.steps;
  EXPECT_EQ(s[0].kind, StepKind::kAnnotation);
  EXPECT_EQ(s[0].stage_id, 1);
  EXPECT_EQ(s[0].iter_id, 2);
  EXPECT_EQ(s[0].annotation, 3);
  EXPECT_EQ(s[1].kind, StepKind::kFuse);
  EXPECT_EQ(s[1].ids, (std::vector<std::int32_t>{0, 1, 2}));
  EXPECT_EQ(s[2].kind, StepKind::kPragma);
  EXPECT_EQ(s[2].pragma_type, "auto_unroll_max_step$64");
  EXPECT_EQ(s[3].kind, StepKind::kReorder);
  EXPECT_EQ(s[3].ids, (std::vector<std::int32_t>{2, 0, 1}));
  EXPECT_EQ(s[4].kind, StepKind::kSplit);
  EXPECT_EQ(s[4].stage_id, 5);
  EXPECT_EQ(s[4].iter_id, 1);
  EXPECT_EQ(s[4].extent, 1024);
  EXPECT_EQ(s[4].lengths, (std::vector<std::int64_t>{2, 1, 4}));
  EXPECT_TRUE(s[4].inner_to_outer);
  EXPECT_EQ(s[5].kind, StepKind::kFollowSplit);
  EXPECT_EQ(s[5].iter_id, 0);
  EXPECT_EQ(s[5].src_step_id, 4);
  EXPECT_EQ(s[5].n_split, 2);
  EXPECT_EQ(s[6].kind, StepKind::kFollowFusedSplit);
  EXPECT_EQ(s[6].iter_id, 1);
  EXPECT_EQ(s[6].ids, (std::vector<std::int32_t>{4, 4}));
  EXPECT_EQ(s[6].level, 1);
  EXPECT_FALSE(s[6].inner_to_outer);
  EXPECT_EQ(s[7].kind, StepKind::kStorageAlign);
  EXPECT_EQ(s[7].iter_id, 2);
  EXPECT_EQ(s[7].factor, 32);
  EXPECT_EQ(s[7].offset, 1);
  EXPECT_EQ(s[8].kind, StepKind::kComputeAt);
  EXPECT_EQ(s[8].target_stage_id, 10);
  EXPECT_EQ(s[8].target_iter_id, 3);
  EXPECT_EQ(s[9].kind, StepKind::kComputeInline);
  EXPECT_EQ(s[9].stage_id, 11);
  EXPECT_EQ(s[10].kind, StepKind::kComputeRoot);
  EXPECT_EQ(s[11].kind, StepKind::kCacheRead);
  EXPECT_EQ(s[11].scope_name, "shared");
  EXPECT_EQ(s[11].ids, (std::vector<std::int32_t>{14, 15}));
  EXPECT_EQ(s[12].kind, StepKind::kCacheWrite);
  EXPECT_EQ(s[12].scope_name, "local");
  EXPECT_EQ(s[13].kind, StepKind::kRfactor);
  EXPECT_EQ(s[13].iter_id, 2);
  EXPECT_EQ(s[13].factor_iter_id, 1);
}

TEST(RecordTest, StepKindNamesRoundTrip) {
  for (int k = 0; k < kNumStepKinds - 1; ++k) {
    const auto kind = static_cast<StepKind>(k);
    EXPECT_EQ(step_kind_from_tag(step_kind_name(kind)), kind) << k;
  }
  EXPECT_EQ(step_kind_from_tag("S"), StepKind::kUnknown);
  EXPECT_EQ(step_kind_from_tag("SPX"), StepKind::kUnknown);
  EXPECT_EQ(step_kind_from_tag(""), StepKind::kUnknown);
}

TEST(RecordTest, AcceptsOlderVersionsAndShortTasks) {
  // v0.2: [workload_key, target] only.
  const Record v2 = parse_ok(R"({"i": [["[\"conv1d_nlc\", 1, 256]", "llvm -mcpu=core-avx2"], [[], [["CI", 5]]]], )"
                             R"("r": [[7.45257e-06], 0, 1.76528, 1593298231], "v": "v0.2"})");
  EXPECT_FALSE(v2.hardware_params.has_value());
  EXPECT_EQ(v2.version, "v0.2");
  EXPECT_EQ(v2.layout_rewrite, 0);
  // Three fields: hardware params, no host.
  const Record v3 = parse_ok(R"({"i": [["[\"m\", 1]", "llvm -keys=cpu", [18, 64, 64, 0, 0, 0, 0, 0]], [[], []]], )"
                             R"("r": [[0.0044742], 0, 0.335558, 1607112214], "v": "v0.3"})");
  ASSERT_TRUE(v3.hardware_params.has_value());
  EXPECT_EQ(v3.hardware_params->num_cores, 18);
  EXPECT_TRUE(v3.steps.empty());
  // v0.5: five fields (no input names).
  const Record v5 =
      parse_ok(R"({"i": [["[\"d\", 1]", "llvm -keys=cpu", [8, 64, 64, 0, 0, 0, 0, 0], "", 2], [[], [["CR", 6]]]], )"
               R"("r": [[8.75e-06, 1.0781e-05], 0, 0.17921, 1606960872], "v": "v0.5"})");
  EXPECT_EQ(v5.layout_rewrite, 2);
  EXPECT_TRUE(v5.task_input_names.empty());
  // No "v" at all (TVM's reader allows it) and integer costs.
  const Record nv = parse_ok(R"({"i": [["k", "cuda"], [[], []]], "r": [[1, 2], 0, 1, 2]})");
  EXPECT_EQ(nv.version, "");
  EXPECT_EQ(nv.costs, (std::vector<double>{1.0, 2.0}));
}

TEST(RecordTest, FormattingDoesNotMatter) {
  const Record a = parse_ok(
      R"({"i":[["k","llvm"],[[],[["SP",2,0,1024,[2,1,4],1],["AN",2,0,3]]]],"r":[[1e-05],0,0.1,1],"v":"v0.6"})");
  const Record b = parse_ok(
      "  {\"v\" : \"v0.6\" ,\n \"r\": [ [ 1e-05 ] , 0 , 0.1 , 1 ] ,\t\"i\": [ [ \"k\" , \"llvm\" ] , "
      "[ [ ] , [ [ \"SP\" , 2 , 0 , 1024 , [ 2 , 1 , 4 ] , true ] , [\"AN\",2,0,3] ] ] ] }\r\n");
  EXPECT_EQ(a, b);
}

TEST(RecordTest, ParserReusesRecordsWithoutLeakingState) {
  RecordParser p;
  Record r;
  ASSERT_TRUE(p.parse(kAllKinds, &r).is_ok());
  ASSERT_TRUE(p.parse(R"({"i": [["k", "cuda"], [[], [["CI", 1]]]], "r": [[], 0, 0, 0]})", &r).is_ok());
  Record fresh = parse_ok(R"({"i": [["k", "cuda"], [[], [["CI", 1]]]], "r": [[], 0, 0, 0]})");
  EXPECT_EQ(r, fresh);  // no hardware params, names, version or step fields left over
  ASSERT_TRUE(p.parse(kAllKinds, &r).is_ok());
  EXPECT_EQ(r, parse_ok(kAllKinds));
}

TEST(RecordTest, WriterRoundTripsAndMatchesTvmShape) {
  const Record r = parse_ok(kAllKinds);
  const std::string line = write_record(r);
  EXPECT_EQ(parse_ok(line), r);
  // Exactly the TVM text for a TVM line (v0.6, ", " separators, shortest doubles).
  const std::string tvm =
      R"({"i": [["[\"011385bbf27c1331dfbf54ddc846ab29\", [1, 64, 6, 6, 4], [1, 64, 6, 6, 4]]", )"
      R"("llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu", [24, 64, 64, 0, 0, 0, 0, 0], "", 2, []], )"
      R"([[], [["FU", 1, [0, 1, 2, 3]], ["AN", 1, 0, 3], ["FU", 2, [0, 1]], ["AN", 2, 0, 3], )"
      R"(["PR", 1, 0, "auto_unroll_max_step$64"], ["AN", 2, 3, 2]]]], )"
      R"("r": [[1.5526e-05, 1.3965e-05, 0.000429498], 0, 0.165026, 1754209236], "v": "v0.6"})";
  EXPECT_EQ(write_record(parse_ok(tvm)), tvm);
  // A v0.2 record keeps its 2-field task.
  const std::string v2 = R"({"i": [["k", "cuda"], [[], [["CI", 1]]]], "r": [[0.5], 0, 1, 2], "v": "v0.2"})";
  EXPECT_EQ(write_record(parse_ok(v2)), v2);
  // Strings are escaped.
  Record odd = r;
  odd.workload_key = "quote\" backslash\\ unicode \u00e9";
  odd.steps[2].pragma_type = "x\"y";
  EXPECT_EQ(parse_ok(write_record(odd)), odd);
  // Control characters are escaped too, and the parser then refuses them.
  odd.workload_key = "newline\n ctl\x01";
  const std::string written = write_record(odd);
  EXPECT_NE(written.find(R"(newline\n ctl\u0001)"), std::string::npos) << written;
  EXPECT_FALSE(RecordParser().parse(written, &odd).is_ok());
}

TEST(RecordTest, WriteStepsIsCompact) {
  const Record r = parse_ok(
      R"({"i": [["k", "llvm"], [[], [["SP", 2, 0, 1024, [2, 1, 4], 1], ["CHR", 1, "shared", [3]]]]], "r": [[1], 0, 0, 0]})");
  std::string out;
  write_steps(r.steps, &out);
  EXPECT_EQ(out, R"([["SP",2,0,1024,[2,1,4],1],["CHR",1,"shared",[3]]])");
}

TEST(RecordTest, Classification) {
  auto rec = [](std::vector<double> costs, int error_no) {
    Record r;
    r.costs = std::move(costs);
    r.error_no = error_no;
    return r;
  };
  EXPECT_EQ(classify(rec({1e-5, 2e-5}, 0)), RecordClass::kMeasured);
  EXPECT_EQ(classify(rec({1e-5}, 1)), RecordClass::kFailed);        // error_no != 0
  EXPECT_EQ(classify(rec({1e10}, 6)), RecordClass::kFailed);        // TVM's failure cost
  EXPECT_EQ(classify(rec({0, 0}, 4)), RecordClass::kFailed);        // error wins over zeros
  EXPECT_EQ(classify(rec({1e-5, 0}, 0)), RecordClass::kFailed);     // a cost <= 0
  EXPECT_EQ(classify(rec({0, 0, 0}, 0)), RecordClass::kCandidate);  // all zero: unmeasured
  EXPECT_EQ(classify(rec({}, 0)), RecordClass::kCandidate);         // no costs
  EXPECT_EQ(record_class_name(RecordClass::kCandidate), "candidate");
  // The one rule for a measurement (as SQL's measurements.failed): a row an
  // upload of measurements stores with no costs or zero costs has failed.
  const std::vector<double> ok{1e-5, 2e-5}, none{}, zeros{0, 0}, negative{1e-5, -1};
  EXPECT_FALSE(measurement_failed(0, ok));
  EXPECT_TRUE(measurement_failed(1, ok));
  EXPECT_TRUE(measurement_failed(0, none));
  EXPECT_TRUE(measurement_failed(0, zeros));
  EXPECT_TRUE(measurement_failed(0, negative));
  EXPECT_EQ(measure_error_name(7), "RUN_TIMEOUT");
  EXPECT_EQ(measure_error_name(42), "UNRECOGNIZED");
  EXPECT_DOUBLE_EQ(mean_cost(rec({1, 2, 3}, 0)), 2.0);
  EXPECT_EQ(mean_cost(rec({}, 0)), 0.0);
  // Unknown error numbers are kept, not rejected.
  const Record r = parse_ok(R"({"i": [["k", "llvm"], [[], []]], "r": [[1e10], 42, 0, 0]})");
  EXPECT_EQ(r.error_no, 42);
  EXPECT_EQ(classify(r), RecordClass::kFailed);
}

struct BadCase {
  const char* line;
  const char* reason;  // expected substring of the message
};

// Prefix/suffix shared by the malformed-step cases.
std::string with_steps(const std::string& steps) {
  return R"({"i": [["k", "llvm"], [[], )" + steps + R"(]], "r": [[1e-05], 0, 0.1, 1], "v": "v0.6"})";
}
std::string with_result(const std::string& result) {
  return R"({"i": [["k", "llvm"], [[], []]], "r": )" + result + R"(, "v": "v0.6"})";
}

TEST(RecordTest, MalformedLinesGetTheirSpecificReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"i": [)", "invalid JSON at offset"},
      {R"({"i": [["k", "llvm"], [[], []]], "r": [[1], 0, 0, 0]} trailing)", "invalid JSON at offset"},
      {R"([1, 2])", "record must be a JSON object, got an array"},
      {R"({"r": [[1], 0, 0, 0]})", "missing \"i\""},
      {R"({"i": [["k", "llvm"], [[], []]]})", "missing \"r\""},
      {R"({"i": [["k", "llvm"], [[], []]], "r": [[1], 0, 0, 0], "x": 1})", "unknown key \"x\""},
      {R"({"i": {"a": 1}, "r": [[1], 0, 0, 0]})", "i: must be an array, got an object"},
      {R"({"i": [["k", "llvm"]], "r": [[1], 0, 0, 0]})", "i: expects 2 fields [task, state], got 1"},
      {R"({"i": ["k", [[], []]], "r": [[1], 0, 0, 0]})", "i[0]: task must be an array, got a string"},
      {R"({"i": [["k"], [[], []]], "r": [[1], 0, 0, 0]})", "i[0]: task expects 2 to 6 fields"},
      {R"({"i": [[7, "llvm"], [[], []]], "r": [[1], 0, 0, 0]})",
       "i[0][0]: workload_key must be a string, got an integer"},
      {R"({"i": [["", "llvm"], [[], []]], "r": [[1], 0, 0, 0]})", "i[0][0]: workload_key is empty"},
      {R"({"i": [["k", null], [[], []]], "r": [[1], 0, 0, 0]})", "i[0][1]: target must be a string, got null"},
      {R"({"i": [["k", "llvm", [1, 2, 3]], [[], []]], "r": [[1], 0, 0, 0]})",
       "i[0][2]: hardware_params must be an array of 8 integers, got an array of 3"},
      {R"({"i": [["k", "llvm", [1, "x", 3, 4, 5, 6, 7, 8]], [[], []]], "r": [[1], 0, 0, 0]})",
       "i[0][2][1]: hardware param must be an integer, got a string"},
      {R"({"i": [["k", "llvm", [1, 2, 3, 4, 5, 6, 7, 8], 5], [[], []]], "r": [[1], 0, 0, 0]})",
       "i[0][3]: target_host must be a string"},
      {R"({"i": [["k", "llvm", [1, 2, 3, 4, 5, 6, 7, 8], "", "x"], [[], []]], "r": [[1], 0, 0, 0]})",
       "i[0][4]: layout_rewrite must be an integer"},
      {R"({"i": [["k", "llvm", [1, 2, 3, 4, 5, 6, 7, 8], "", 0, [1]], [[], []]], "r": [[1], 0, 0, 0]})",
       "i[0][5][0]: input name must be a string"},
      {R"({"i": [["k", "llvm"], [[]]], "r": [[1], 0, 0, 0]})", "i[1]: state expects 2 fields [stages, steps], got 1"},
      {R"({"i": [["k", "llvm"], [{}, []]], "r": [[1], 0, 0, 0]})", "i[1][0]: stages must be an array"},
      {with_steps(R"({"SP": 1})"), "i[1][1]: steps must be an array, got an object"},
      {with_steps(R"(["CI", 1])"), "i[1][1][0]: step must be an array, got a string"},
      {with_steps(R"([[]])"), "i[1][1][0]: step is empty"},
      {with_steps(R"([[5, 1]])"), "i[1][1][0][0]: step kind must be a string, got an integer"},
      {with_steps(R"([["CI", 1], ["CI", 2], ["CI", 3], ["SP", 3, 0, 1024, [2, 4]]])"),
       "i[1][1][3]: SP step expects 6 fields, got 5"},
      {with_steps(R"([["AN", 1, 2]])"), "i[1][1][0]: AN step expects 4 fields, got 3"},
      {with_steps(R"([["CI"]])"), "i[1][1][0]: CI step expects 2 fields, got 1"},
      {with_steps(R"([["FFSP", 1, 0, [2], 1]])"), "i[1][1][0]: FFSP step expects 6 fields, got 5"},
      {with_steps(R"([["SP", 3, 0, 1024, 4, 1]])"),
       "i[1][1][0][4]: SP lengths must be an array of integers, got an integer"},
      {with_steps(R"([["SP", 3, 0, 1024, [2, "4"], 1]])"),
       "i[1][1][0][4][1]: SP lengths must hold integers, got a string"},
      {with_steps(R"([["SP", 3, 0, 1024.5, [2], 1]])"), "i[1][1][0][3]: SP extent must be an integer, got a number"},
      {with_steps(R"([["SP", 3, 0, 1024, [2], 2]])"),
       "i[1][1][0][5]: SP inner_to_outer must be 0 or 1, got an integer"},
      {with_steps(R"([["CI", "5"]])"), "i[1][1][0][1]: CI stage_id must be an int32 integer, got a string"},
      {with_steps(R"([["CI", 1099511627776]])"), "i[1][1][0][1]: CI stage_id must be an int32 integer"},
      {with_steps(R"([["PR", 1, 0, 64]])"), "i[1][1][0][3]: PR pragma_type must be a string, got an integer"},
      {with_steps(R"([["CHW", 1, ["local"]]])"), "i[1][1][0][2]: CHW scope_name must be a string, got an array"},
      {with_steps(R"([["FU", 1, null]])"), "i[1][1][0][2]: FU fused_ids must be an array of integers, got null"},
      {with_steps(R"([["RE", 1, [0, 1.5]]])"), "i[1][1][0][2][1]: RE after_ids must hold integers in int32 range"},
      {with_steps(R"([["CA", 1, 2, true]])"),
       "i[1][1][0][3]: CA target_iter_id must be an int32 integer, got a boolean"},
      {with_result(R"([[NaN], 0, 0.1, 1])"), "non-finite number NaN"},
      {with_result(R"([[1e-05, Infinity], 0, 0.1, 1])"), "non-finite number Infinity"},
      {with_result(R"([[1e-05, -Infinity], 0, 0.1, 1])"), "non-finite number Infinity"},
      {with_result(R"([[1e-05, -0.5], 0, 0.1, 1])"), "r[0][1]: cost is negative (-0.5)"},
      {with_result(R"([["1e-05"], 0, 0.1, 1])"), "r[0][0]: cost must be a number, got a string"},
      {with_result(R"([[1e-05], 0, 0.1])"), "r: expects 4 fields [costs, error_no, all_cost, timestamp], got 3"},
      {with_result(R"({"costs": 1})"), "r: must be an array, got an object"},
      {with_result(R"([1e-05, 0, 0.1, 1])"), "r[0]: costs must be an array of numbers, got a number"},
      {with_result(R"([[1e-05], 0.0, 0.1, 1])"), "r[1]: error_no must be an int32 integer, got a number"},
      {with_result(R"([[1e-05], 0, "x", 1])"), "r[2]: all_cost must be a finite number, got a string"},
      {with_result(R"([[1e-05], 0, 0.1, null])"), "r[3]: timestamp must be a finite number, got null"},
      {R"({"i": [["k", "llvm"], [[], []]], "r": [[1], 0, 0, 0], "v": 6})", "v: version must be a string"},
      {"", "empty line"},
      {"   \t", "empty line"},
      {"# Keep a valid schedule for demonstration.", "comment line"},
  };
  ASSERT_GE(cases.size(), 20u);
  RecordParser p;
  for (const auto& [line, reason] : cases) {
    Record r;
    const Status s = p.parse(line, &r);
    ASSERT_FALSE(s.is_ok()) << "accepted: " << line;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << line;
    EXPECT_NE(s.message().find(reason), std::string::npos)
        << "line:     " << line << "\nexpected: " << reason << "\ngot:      " << s.message();
    // The DOM reference gives the same verdict (parse() = SAX fast path + DOM).
    Record r2;
    EXPECT_EQ(p.TEST_parse_dom(line, &r2).message(), s.message()) << line;
  }
}

// record.h's value rules: TVM's step kinds only, no negative ids, extents or
// lengths, no control characters in strings. Each rejection names the field.
TEST(RecordTest, ValueRulesNameTheField) {
  auto task = [](const std::string& t) {
    return R"({"i": [)" + t + R"(, [[], [["CI", 1]]]], "r": [[1e-05], 0, 0.1, 1], "v": "v0.6"})";
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {with_steps(R"([["CI", 1], ["ZZ", 3]])"),
       R"(i[1][1][1][0]: step kind "ZZ" is not one of TVM's (AN, FU, PR, RE, SP, FSP, FFSP, SA, CA, CI, CR, CHR, CHW, RF))"},
      {with_steps(R"([["S\u0000P", 3, 0, 8, [2], 1]])"), R"(i[1][1][0][0]: step kind "S\u0000P" is not one of TVM's)"},
      {with_steps(R"([["sp", 3, 0, 8, [2], 1]])"), R"(i[1][1][0][0]: step kind "sp")"},
      {with_steps(R"([["CI", -1]])"), "i[1][1][0][1]: CI stage_id must be >= 0, got -1"},
      {with_steps(R"([["AN", 1, -2, 3]])"), "i[1][1][0][2]: AN iter_id must be >= 0, got -2"},
      {with_steps(R"([["AN", 1, 2, 12]])"),
       "i[1][1][0][3]: AN annotation must be 0 to 11 (TVM's IteratorAnnotation), got 12"},
      {with_steps(R"([["AN", 1, 2, -1]])"), "i[1][1][0][3]: AN annotation must be 0 to 11"},
      {with_steps(R"([["FU", 1, [0, -1]]])"), "i[1][1][0][2][1]: FU fused_ids must hold values >= 0, got -1"},
      {with_steps(R"([["PR", 1, 0, "auto_unroll\u0001"]])"),
       "i[1][1][0][3]: PR pragma_type must hold no control characters, got U+0001 at offset 11"},
      {with_steps(R"([["RE", 1, [-3]]])"), "i[1][1][0][2][0]: RE after_ids must hold values >= 0, got -3"},
      {with_steps(R"([["SP", 3, 0, -1024, [2], 1]])"), "i[1][1][0][3]: SP extent must be >= 0, got -1024"},
      {with_steps(R"([["SP", 3, 0, 1024, [2, -4], 1]])"), "i[1][1][0][4][1]: SP lengths must hold values >= 0, got -4"},
      {with_steps(R"([["FSP", 3, 0, -1, 2]])"), "i[1][1][0][3]: FSP src_step_id must be >= 0"},
      {with_steps(R"([["FSP", 3, 0, 1, -2]])"), "i[1][1][0][4]: FSP n_split must be >= 0"},
      {with_steps(R"([["FFSP", 3, 0, [1, -1], 1, 0]])"), "i[1][1][0][3][1]: FFSP src_step_ids must hold values >= 0"},
      {with_steps(R"([["FFSP", 3, 0, [1], -1, 0]])"), "i[1][1][0][4]: FFSP level must be >= 0"},
      {with_steps(R"([["SA", 3, 0, -32, 0]])"), "i[1][1][0][3]: SA factor must be >= 0"},
      {with_steps(R"([["CA", 3, -1, 0]])"), "i[1][1][0][2]: CA target_stage_id must be >= 0"},
      {with_steps(R"([["CA", 3, 1, -1]])"), "i[1][1][0][3]: CA target_iter_id must be >= 0"},
      {with_steps(R"([["CR", -7]])"), "i[1][1][0][1]: CR stage_id must be >= 0"},
      {with_steps(R"([["CHR", 1, "sha\tred", [2]]])"),
       "i[1][1][0][2]: CHR scope_name must hold no control characters, got U+0009"},
      {with_steps(R"([["CHR", 1, "shared", [-2]]])"), "i[1][1][0][3][0]: CHR reader_stage_ids must hold values >= 0"},
      {with_steps(R"([["CHW", 1, "lo\u007fcal"]])"),
       "i[1][1][0][2]: CHW scope_name must hold no control characters, got U+007F"},
      {with_steps(R"([["RF", 1, 0, -1]])"), "i[1][1][0][3]: RF factor_iter_id must be >= 0"},
      {task(R"(["k\u0000", "llvm"])"), "i[0][0]: workload_key must hold no control characters, got U+0000 at offset 1"},
      {task(R"(["k", "llvm\n-mcpu=x"])"), "i[0][1]: target must hold no control characters, got U+000A"},
      {task(R"(["k", "llvm", [1, 2, 3, 4, 5, 6, 7, 8], "llvm\r"])"), "i[0][3]: target_host must hold no control"},
      {task(R"(["k", "llvm", [1, 2, 3, 4, 5, 6, 7, 8], "", -1])"), "i[0][4]: layout_rewrite must be >= 0, got -1"},
      {task(R"(["k", "llvm", [1, 2, 3, 4, 5, 6, 7, 8], "", 0, ["a", "b\u001b"]])"),
       "i[0][5][1]: input name must hold no control characters, got U+001B"},
      {R"({"i": [["k", "llvm"], [[], []]], "r": [[1], 0, 0, 0], "v": "v0.6\u0000"})",
       "v: version must hold no control characters"},
  };
  RecordParser p;
  for (const auto& [line, reason] : cases) {
    Record r;
    const Status s = p.parse(line, &r);
    ASSERT_FALSE(s.is_ok()) << "accepted: " << line;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << line;
    EXPECT_EQ(s.message().rfind(reason, 0), 0u)
        << "line:     " << line << "\nexpected: " << reason << "\ngot:      " << s.message();
    Record r2;
    EXPECT_EQ(p.TEST_parse_dom(line, &r2).message(), s.message()) << line;
  }
}

// What TVM does write stays accepted: GPU num_cores -1, an unknown extent 0,
// a negative storage-align offset, every annotation value, unknown error_no.
TEST(RecordTest, ValueRulesKeepWhatTvmWrites) {
  const Record r = parse_ok(
      R"({"i": [["k", "cuda", [-1, 16, 64, 49152, 2147483647, 1024, 8, 32], "", 0, []], )"
      R"([[], [["SP", 1, 0, 0, [1, 1], 1], ["SA", 2, 0, 32, -1], ["AN", 1, 0, 0], ["AN", 1, 1, 11], ["FSP", 0, 0, 0, 0]]]], )"
      R"("r": [[1e10], 42, 0, 0], "v": "v0.6"})");
  ASSERT_EQ(r.steps.size(), 5u);
  EXPECT_EQ(r.hardware_params->num_cores, -1);
  EXPECT_EQ(r.steps[1].offset, -1);
  EXPECT_EQ(r.steps[3].annotation, 11);
  EXPECT_EQ(parse_ok(write_record(r)), r);
}

// Predict's steps (parse_steps) follow the same rules; a hand-built kUnknown
// step is written as ["unknown", stage_id], which no parser takes back.
TEST(RecordTest, ValueRulesHoldForStepListsAndTheWriter) {
  std::vector<Step> steps;
  EXPECT_EQ(parse_steps(boost::json::parse(R"([["CI", 1], ["ZZ", 2]])"), "programs[0].steps", &steps).message(),
            "programs[0].steps[1][0]: step kind \"ZZ\" is not one of TVM's (AN, FU, PR, RE, SP, FSP, FFSP, SA, CA, CI, "
            "CR, CHR, CHW, RF)");
  EXPECT_EQ(parse_steps(boost::json::parse(R"([["CI", -1]])"), "steps", &steps).message(),
            "steps[0][1]: CI stage_id must be >= 0, got -1");
  Record r = parse_ok(with_steps(R"([["CI", 1]])"));
  r.steps.push_back(Step{});
  r.steps.back().stage_id = 4;
  const std::string line = write_record(r);
  EXPECT_NE(line.find(R"(["unknown", 4])"), std::string::npos) << line;
  Record back;
  EXPECT_EQ(RecordParser().parse(line, &back).message().rfind("i[1][1][1][0]: step kind \"unknown\"", 0), 0u);
}

TEST(RecordTest, HugeExponentIsRejectedNotInfinite) {
  Record r;
  const Status s = RecordParser().parse(with_result(R"([[1e400], 0, 0.1, 1])"), &r);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

// The DOM reference converts doubles with Boost (may be one ulp off). This
// copies `ref`'s doubles into `r` where they agree to 1e-15, so that ==
// compares everything else exactly. (Rounding through float instead
// is miscompiled by GCC 12.2 -O2: two adjacent double->float->double casts
// are dropped.)
Record normalized(Record r, const Record& ref) {
  auto close = [](double a, double b) {
    return a == b || std::fabs(a - b) <= 1e-15 * std::max(std::fabs(a), std::fabs(b));
  };
  for (std::size_t k = 0; k < r.costs.size() && k < ref.costs.size(); ++k) {
    if (close(r.costs[k], ref.costs[k])) r.costs[k] = ref.costs[k];
  }
  if (close(r.all_cost, ref.all_cost)) r.all_cost = ref.all_cost;
  if (close(r.timestamp, ref.timestamp)) r.timestamp = ref.timestamp;
  return r;
}

// Mutates a valid line at random (bytes flipped, deleted, duplicated, cut)
// and checks that parse() never throws or crashes and that the SAX fast path
// agrees with the DOM reference on every verdict, record and message.
TEST(RecordTest, RandomMutationsAgreeWithReference) {
  const std::vector<std::string> seeds = {
      kAllKinds,
      with_steps(R"([["SP", 2, 0, 1024, [2, 1, 4], 1], ["FSP", 4, 0, 0, 2], ["CHR", 1, "shared", [3]]])"),
      R"({"i": [["[\"conv1d_nlc\", 1, 256]", "llvm -mcpu=core-avx2"], [[], [["CI", 5]]]], "r": [[7.45257e-06], 0, 1.76528, 1593298231], "v": "v0.2"})",
      with_steps(R"([["ZZ", 3, 1.5e-3, [true, null, {"k": -2}], "\u00e9\"q"], ["CI", 1]])"),
      // Value rules: one mutation away from a negative id or an unknown kind.
      with_steps(R"([["SA", 1, 0, 8, -1], ["AN", 2, 1, 11], ["FU", 3, [0, 1]], ["CA", 4, 1, 0]])"),
  };
  const std::string alphabet = "[]{}\",:0123456789-.eE \\tnrufalsNI#SPANFUCHRWX";
  std::mt19937 rng(12345);
  RecordParser p;
  int accepted = 0;
  int duplicates = 0;
  for (int it = 0; it < 30000; ++it) {
    std::string line = seeds[static_cast<std::size_t>(it) % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !line.empty(); ++e) {
      const std::size_t pos = rng() % line.size();
      switch (rng() % 4) {
        case 0: line[pos] = alphabet[rng() % alphabet.size()]; break;
        case 1: line.erase(pos, 1 + rng() % 3); break;
        case 2: line.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
        case 3: line.resize(pos); break;
      }
    }
    Record fast;
    Record ref;
    const Status sf = p.parse(line, &fast);
    const Status sr = p.TEST_parse_dom(line, &ref);
    if (!sf.is_ok() && sr.is_ok() && sf.message().rfind("duplicate key", 0) == 0) {
      ++duplicates;  // Boost's DOM keeps the last of duplicate keys; parse() rejects them
      continue;
    }
    ASSERT_EQ(sf.is_ok(), sr.is_ok()) << line << "\nfast: " << sf.to_string() << "\nref: " << sr.to_string();
    if (sf.is_ok()) {
      ++accepted;
      ASSERT_EQ(normalized(fast, ref), ref) << line;
      ASSERT_EQ(parse_ok(write_record(fast)), fast) << line;  // exact, doubles included
    } else {
      ASSERT_EQ(sf.message(), sr.message());
      ASSERT_EQ(sf.code(), StatusCode::kInvalidArgument) << sf.to_string();
    }
  }
  EXPECT_GT(accepted, 100);  // the mutations also produce valid variants
  std::printf("mutations: %d accepted, %d duplicate-key lines\n", accepted, duplicates);
}

TEST(RecordTest, DoublesAreExactAndRoundTrip) {
  // Boost 1.81's own conversion is off by one ulp for some inputs (e.g. 1.76e28).
  for (const char* text : {"1.76e28", "2.1829489720880483e+41", "1.3927926388013963e-143", "0.1", "1e-300"}) {
    const Record r = parse_ok(with_result(std::string("[[") + text + "], 0, " + text + ", " + text + "]"));
    double want = 0;
    std::from_chars(text, text + std::strlen(text), want);
    EXPECT_EQ(r.costs[0], want) << text;
    EXPECT_EQ(r.all_cost, want) << text;
    EXPECT_EQ(r.timestamp, want) << text;
    EXPECT_EQ(parse_ok(write_record(r)), r) << text;
  }
}

TEST(RecordTest, StagesAndDuplicateKeys) {
  // The contents of "stages" are ignored (TVM writes []).
  const Record st = parse_ok(R"({"i": [["k", "llvm"], [[{"x": [1]}, 2, "s"], [["CI", 1]]]], "r": [[1], 0, 0, 0]})");
  EXPECT_EQ(st.steps.size(), 1u);
  // Duplicate keys are rejected (TVM's reader would silently read both).
  Record d;
  const Status s =
      RecordParser().parse(R"({"i": [["k", "llvm"], [[], []]], "r": [[1], 0, 0, 0], "r": [[2], 0, 0, 0]})", &d);
  EXPECT_EQ(s.message(), "duplicate key \"r\"");
}

TEST(RecordTest, ParseStepsFromJsonValue) {
  std::vector<Step> steps;
  EXPECT_TRUE(parse_steps(boost::json::parse(R"([["CI", 1], ["SP", 2, 0, 8, [2], 1]])"), "steps", &steps).is_ok());
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1].lengths, (std::vector<std::int64_t>{2}));
  const Status s = parse_steps(boost::json::parse(R"([["CI"]])"), "programs[3].steps", &steps);
  EXPECT_EQ(s.message(), "programs[3].steps[0]: CI step expects 2 fields, got 1");
}

}  // namespace
}  // namespace tcl::core
