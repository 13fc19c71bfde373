// tests/bench/gate_test.cc — bench_gate (bench/gate.cc) on a checkpoint that
// keeps a per-platform adapter, as tcld's adapter distill stores one: scored
// as the trunk by default (the teacher's own weights: no change at all) and
// as the platform's adapted model with --platform (scores that differ).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/files.h"
#include "tests/lib/adapted_checkpoint.h"
#include "tests/lib/model_fixture.h"

namespace tcl::testing {
namespace {

const std::string kRecords = std::string(TCL_SOURCE_DIR) + "/tests/data/gpu-h100/records.jsonl.gz";
const std::string kBenchGate = std::string(TCL_BINARY_DIR) + "/bench/bench_gate";

// bench_gate's stdout and exit status.
int bench_gate(const std::string& args, std::string* out) {
  FILE* p = ::popen((kBenchGate + " " + kRecords + " --per-task 40 --threads 1 " + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr) *out += buf;
  return ::pclose(p);
}

// The reason line of the comparison over every task: "all: ...".
std::string all_tasks_line(const std::string& out) {
  const std::size_t at = out.find("\nall: ");
  return at == std::string::npos ? std::string() : out.substr(at + 1, out.find('\n', at + 1) - at - 1);
}

TEST(BenchGateTest, AnAdaptedCheckpointIsScoredAsThePlatformsModel) {
  const std::string trunk = fresh_checkpoint(1);
  const std::string dir = ::testing::TempDir();
  const std::string teacher = dir + "/gate_teacher.ckpt", student = dir + "/gate_student.ckpt";
  ASSERT_TRUE(core::write_file_atomic(teacher, trunk));
  ASSERT_TRUE(core::write_file_atomic(student, with_adapter(trunk, "h100", 3)));
  const std::string pair = "--teacher " + teacher + " --student " + student;

  std::string as_trunk, as_h100, as_other;
  ASSERT_EQ(bench_gate(pair, &as_trunk), 0) << as_trunk;
  ASSERT_EQ(bench_gate(pair + " --platform h100", &as_h100), 0) << as_h100;
  ASSERT_EQ(bench_gate(pair + " --platform v100", &as_other), 0) << as_other;
  const std::string trunk_line = all_tasks_line(as_trunk), h100_line = all_tasks_line(as_h100);
  ASSERT_FALSE(trunk_line.empty()) << as_trunk;
  ASSERT_FALSE(h100_line.empty()) << as_h100;
  EXPECT_NE(trunk_line.find("(+0.0000 ± "), std::string::npos) << trunk_line;  // the teacher's own weights
  EXPECT_NE(h100_line, trunk_line) << h100_line;                               // its adapter folded in
  EXPECT_EQ(all_tasks_line(as_other), trunk_line);                             // no adapter for v100: the trunk
}

}  // namespace
}  // namespace tcl::testing
