// tests/ui/console_e2e_test.cc — the web console (ui/) in a real browser against a real tcld on a real
// PostgreSQL (tests/lib/tcld_env.h). This test builds what the pages must show through the API, then
// runs tests/ui/console_test.mjs (Node.js, the pinned playwright-core driving Debian's headless
// chromium), which opens each page, checks it against the API's answers and keeps a screenshot of
// each in build/test-artifacts/console/ (TCL_TEST_ARTIFACTS=<dir> elsewhere).
//   - HostileNamesAreShownAsText: a platform whose description and target carry HTML and script is
//     shown as that text, and no script runs (the CSP has no inline script; the pages build text nodes).
//   - EveryPageShowsARealLineageAndAJobsProgressMoves: two platforms, a train job, a distill, a refused
//     candidate, a sample request and a tuning run; Lineage, Version, Quality over time, Platforms and
//     Tuning runs (its curve) show them;
//     then a long train job runs and the Jobs page shows its progress move without a reload.
// The browser talks to tcld itself (tcld_port()); in contract mode the test's own API calls still go
// through the validating proxy.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/line_reader.h"
#include "tests/lib/http_client.h"
#include "tests/lib/tcld_env.h"

namespace tcl::testing {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

const std::string kData = std::string(TCL_SOURCE_DIR) + "/../shared/data";
constexpr const char* kHostile =
    R"(<img src=x onerror="window.pwned=1"><script>window.pwned=2</script><b class="pwned">&amp; 'x'</b>)";

// Every `step`-th line of a platform's records, n at most.
std::string lines_of(const std::string& platform, std::size_t step, std::size_t n) {
  auto reader = core::LineReader::open(kData + "/" + platform + "/records.jsonl.gz");
  if (!reader) throw std::runtime_error(reader.status().message());
  std::string body;
  std::string_view line;
  std::size_t kept = 0;
  for (std::size_t i = 0; kept < n && (*reader)->next(&line); ++i) {
    if (i % step != 0) continue;
    body.append(line);
    body.push_back('\n');
    ++kept;
  }
  return body;
}

// A shell word: 'text' with every ' escaped.
std::string shell_word(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class ConsoleTest : public TcldEnvTest {
 protected:
  void start() {
    ASSERT_NO_FATAL_FAILURE(start_tcld({"--train-threads", "1"}));
    admin_ = token("ops", "admin");
    read_ = token("viewer", "read");  // what the console is given: read is enough
  }
  HttpResult call(const std::string& method, const std::string& target, const std::string& body = "") {
    return http_call(tcld_->port(), HttpCall{method, target, body, admin_, {}, 60s});
  }
  void create_platform(const std::string& name, const std::string& target, const std::string& hw,
                       const std::string& description) {
    const json::object body{
        {"name", name}, {"target", target}, {"hardware_params", json::parse(hw)}, {"description", description}};
    const HttpResult r = call("POST", "/v1/platforms", json::serialize(body));
    ASSERT_EQ(r.status, 201) << r.body;
  }
  std::int64_t start_job(const std::string& platform, const std::string& options) {
    const HttpResult started = call("POST", "/v1/platforms/" + platform + "/jobs", options);
    EXPECT_EQ(started.status, 202) << started.body;
    return started.status == 202 ? started.json().at("id").as_int64() : 0;
  }
  json::value wait_job(std::int64_t id) {
    json::value job;
    const auto deadline = std::chrono::steady_clock::now() + 180s;
    while (std::chrono::steady_clock::now() < deadline) {
      job = call("GET", "/v1/jobs/" + std::to_string(id)).json();
      const auto state = job.at("state").as_string();
      if (state == "succeeded" || state == "failed" || state == "cancelled") break;
      std::this_thread::sleep_for(200ms);
    }
    return job;
  }
  json::value run_job(const std::string& platform, const std::string& options) {
    return wait_job(start_job(platform, options));
  }

  // Runs console_test.mjs in `mode` with `extra` arguments; its output is printed, and every check
  // it failed is a failure here. Returns its exit code.
  int browse(const std::string& mode, const std::string& extra = "") {
    const std::string dir = std::string(TCL_SOURCE_DIR) + "/tests/ui";
    if (std::system(("bash " + shell_word(dir + "/setup.sh")).c_str()) != 0) {
      ADD_FAILURE() << "tests/ui/setup.sh failed (node, npm and the pinned playwright-core)";
      return -1;
    }
    const char* chromium = std::getenv("TCL_CHROMIUM");
    if (!std::filesystem::exists(chromium != nullptr ? chromium : "/usr/bin/chromium")) {
      ADD_FAILURE() << "no chromium: scripts/install-deps.sh installs Debian's";
      return -1;
    }
    const char* artifacts = std::getenv("TCL_TEST_ARTIFACTS");
    const std::string out =
        (artifacts != nullptr ? std::string(artifacts) : std::string(TCL_BINARY_DIR) + "/test-artifacts") +
        "/console/" + mode;
    const std::string cmd = "cd " + shell_word(dir) + " && timeout -k 5 170 node console_test.mjs --url " +
                            shell_word("http://127.0.0.1:" + std::to_string(tcld_->tcld_port())) + " --token " +
                            shell_word(read_) + " --out " + shell_word(out) + " --mode " + mode + " " + extra + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) {
      ADD_FAILURE() << "cannot start node";
      return -1;
    }
    std::string output;
    std::array<char, 4096> buf{};
    while (std::fgets(buf.data(), buf.size(), p) != nullptr) output += buf.data();
    const int rc = pclose(p);
    std::printf("---- console_test.mjs --mode %s ----\n%s", mode.c_str(), output.c_str());
    for (std::size_t at = 0; (at = output.find("FAIL ", at)) != std::string::npos; ++at) {
      const std::size_t end = output.find('\n', at);
      ADD_FAILURE() << output.substr(at, end - at);
    }
    EXPECT_EQ(rc, 0) << "console_test.mjs --mode " << mode;
    return rc;
  }

  std::string admin_, read_;
};

TEST_F(ConsoleTest, HostileNamesAreShownAsText) {
  start();
  ASSERT_NO_FATAL_FAILURE(create_platform("hostile", kHostile, "[4, 32, 64, 0, 0, 0, 0, 0]", kHostile));
  ASSERT_NO_FATAL_FAILURE(create_platform("plain", "llvm -keys=cpu", "[8, 32, 64, 0, 0, 0, 0, 0]", "a plain one"));
  // The description and target come back byte for byte: escaping is the page's job, not the API's.
  EXPECT_EQ(call("GET", "/v1/platforms/hostile").json().at("description").as_string(), kHostile);
  browse("hostile", "--hostile " + shell_word(kHostile));
}

TEST_F(ConsoleTest, EveryPageShowsARealLineageAndAJobsProgressMoves) {
  start();
  ASSERT_NO_FATAL_FAILURE(create_platform("x16", "llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu",
                                          "[16, 64, 64, 0, 0, 0, 0, 0]", std::string("16-core server ") + kHostile));
  ASSERT_NO_FATAL_FAILURE(create_platform("t4",
                                          "cuda -keys=cuda,gpu -arch=sm_75 -max_num_threads=1024 -thread_warp_size=32",
                                          "[-1, 16, 64, 49152, 2147483647, 1024, 8, 32]", "NVIDIA T4"));
  ASSERT_EQ(call("POST", "/v1/platforms/x16/measurements", lines_of("x86-16c", 40, 600)).status, 201);
  ASSERT_EQ(call("POST", "/v1/platforms/t4/measurements", lines_of("gpu-2080ti", 60, 600)).status, 201);
  ASSERT_EQ(call("POST", "/v1/platforms/t4/candidates", lines_of("gpu-2080ti", 31, 300)).status, 201);
  // One onboarding round of t4 (random picks need no model).
  const HttpResult round =
      call("POST", "/v1/platforms/t4/sample-requests", R"({"budget": 12, "strategy": "random", "min_per_task": 0})");
  ASSERT_EQ(round.status, 201) << round.body;

  // The lineage: v1 trained on x16; v2 folds t4 in (an adapter); v3 the same with a learning rate
  // too small to learn anything, so the gate refuses it (t4's top-1 not above the teacher's zero-shot).
  // (The adapter method named: best-of, the default, trains t4's adapter at its own learning rate.)
  const json::value v1 = run_job("x16", R"({"kind": "train", "epochs": 1, "seed": 1})");
  ASSERT_EQ(v1.at("state").as_string(), "succeeded") << json::serialize(v1);
  const json::value v2 = run_job("t4", R"({"kind": "distill", "method": "adapter", "epochs": 2, "seed": 1})");
  ASSERT_EQ(v2.at("state").as_string(), "succeeded") << json::serialize(v2);
  const json::value v3 =
      run_job("t4", R"({"kind": "distill", "method": "adapter", "epochs": 1, "seed": 2, "learning_rate": 0.000001})");
  ASSERT_EQ(v3.at("state").as_string(), "succeeded") << json::serialize(v3);
  const json::value refused = call("GET", "/v1/models/" + std::to_string(v3.at("result_version").as_int64())).json();
  ASSERT_EQ(refused.at("status").as_string(), "candidate") << json::serialize(refused);
  // v4: the default distill (best-of) of t4 from production (v2), whose version says per platform which
  // model serves it; the version page must show it.
  const json::value v4 = run_job("t4", R"({"kind": "distill", "epochs": 1, "column_epochs": 1, "max_old_bank": 600,
                                           "unlabeled_ratio": 0, "seed": 3})");
  ASSERT_EQ(v4.at("state").as_string(), "succeeded") << json::serialize(v4);
  // A tuning run as tclctl tune stores it (its first round before every task had a program).
  const HttpResult run = call("PUT", "/v1/platforms/x16/tuning-runs/tune-0123456789abcdef",
                              R"({"network": "resnet50", "model": "lineage+online", "seed": 1, "rounds": [
                                  {"measured": 16, "network_seconds": null, "wall_seconds": 2},
                                  {"measured": 32, "network_seconds": 0.0042, "wall_seconds": 4},
                                  {"measured": 48, "network_seconds": 0.0031, "wall_seconds": 6}]})");
  ASSERT_EQ(run.status, 201) << run.body;
  const auto t0 = std::chrono::steady_clock::now();
  browse("lineage");

  // A job that runs long enough to watch: the Jobs page must show its progress move.
  const std::int64_t long_job = start_job("x16", R"({"kind": "train", "epochs": 200, "seed": 3})");
  ASSERT_GT(long_job, 0);
  browse("job", "--job " + std::to_string(long_job));
  EXPECT_EQ(call("POST", "/v1/jobs/" + std::to_string(long_job) + "/cancel").status, 200);
  std::printf("[ console ] browser stages: %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  EXPECT_EQ(wait_job(long_job).at("state").as_string(), "cancelled");
}

}  // namespace
}  // namespace tcl::testing
