// clients/python against the real tcld: starts PostgreSQL and tcld (with a
// training worker) through tests/lib, then runs the client's own unittest
// suite (clients/python/test_tcl_client.py) with TCL_URL, TCL_TOKEN and
// TCL_RECORDS set, and asserts it passes; Python's output is printed on
// failure. The TVM example is only compiled (TVM is not installed here).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/line_reader.h"
#include "tests/lib/pg_cluster.h"
#include "tests/lib/tcld_env.h"
#include "tests/lib/tcld_process.h"

namespace tcl::testing {
namespace {

const std::string kSource = TCL_SOURCE_DIR;
const std::string kData = kSource + "/../shared/data";

// Runs `command` through the shell; returns its exit code and fills *output
// with stdout and stderr.
int run(const std::string& command, std::string* output) {
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) output->append(buf.data(), n);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Every 16th record of the x86 log: ~1,500 records over all its tasks.
std::string write_records(const std::filesystem::path& dir) {
  auto reader = core::LineReader::open(kData + "/x86-16c/records.jsonl.gz");
  if (!reader) throw std::runtime_error(reader.status().message());
  const std::string path = (dir / "records.jsonl").string();
  std::ofstream out(path);
  std::string_view line;
  for (std::size_t i = 0; (*reader)->next(&line); ++i) {
    if (i % 16 == 0) out << line << '\n';
  }
  return path;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

class PythonClientTest : public TcldEnvTest {};

TEST_F(PythonClientTest, TheClientSuitePassesAgainstARealTcld) {
  ASSERT_NO_FATAL_FAILURE(start_tcld({"--train-workers", "1", "--train-threads", "1"}));
  TcldProcess& tcld = *tcld_;
  const std::string token = tcld.create_token("python", "admin");
  ASSERT_FALSE(token.empty());

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tcl-python-client-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string records = write_records(dir);

  std::string output;
  const int code = run("env PYTHONDONTWRITEBYTECODE=1 TCL_URL=http://127.0.0.1:" + std::to_string(tcld.port()) +
                           " TCL_TOKEN=" + quoted(token) + " TCL_RECORDS=" + quoted(records) + " python3 " +
                           quoted(kSource + "/clients/python/test_tcl_client.py") + " -v",
                       &output);
  EXPECT_EQ(code, 0) << output << "\n---- tcld log ----\n" << tcld.log();
  EXPECT_NE(output.find("OK"), std::string::npos) << output;
  std::filesystem::remove_all(dir);
}

TEST_F(PythonClientTest, TheTvmExampleCompiles) {
  const std::filesystem::path cfile =
      std::filesystem::temp_directory_path() / ("tcl-tvm-example-" + std::to_string(::getpid()) + ".pyc");
  std::string output;
  const int code =
      run("python3 -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], "
          "doraise=True)' " +
              quoted(kSource + "/clients/python/examples/tvm_cost_model.py") + " " + quoted(cfile.string()),
          &output);
  EXPECT_EQ(code, 0) << output;
  std::filesystem::remove(cfile);
}

}  // namespace
}  // namespace tcl::testing
