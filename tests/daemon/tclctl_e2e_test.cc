// tclctl, the binary, against a real tcld: platform commands, a batched and
// retried upload (idempotent), predict (plain and --top), lineage and jobs.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "core/program_id.h"
#include "core/record.h"
#include "registry/model_store.h"
#include "registry/pg_pool.h"
#include "tests/lib/http_client.h"
#include "tests/lib/model_fixture.h"
#include "tests/lib/pg_cluster.h"
#include "tests/lib/shared_data.h"
#include "tests/lib/tcld_env.h"
#include "tests/lib/tcld_process.h"

namespace tcl::testing {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kTclctl = std::string(TCL_BINARY_DIR) + "/tools/tclctl";

struct CliRun {
  int exit_code = -1;
  std::string out;  // stdout; stderr goes to the test log
};

class TclctlTest : public TcldEnvTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(start_tcld());
    token_ = token("lab", "admin");
    dir_ = fs::temp_directory_path() / ("tclctl-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    TcldEnvTest::TearDown();
  }
  CliRun tclctl(const std::string& args) {
    const std::string cmd = "TCL_URL=http://127.0.0.1:" + std::to_string(tcld_->port()) + " TCL_TOKEN=" + token_ +
                            " " + kTclctl + " " + args;
    CliRun r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
    const int status = ::pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
  }
  // The first n lines of x86-16c, plus `extra` lines, as a file.
  std::string write_records(std::size_t n, const std::string& extra = "") {
    const std::string path = (dir_ / "records.jsonl").string();
    std::ofstream out(path);
    for (const std::string& line : shared_data_lines("x86-16c", n)) out << line << '\n';
    out << extra;
    return path;
  }
  void create_platform() {
    const CliRun r = tclctl(
        "platform create --name x16 --target 'llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu' "
        "--hardware-params 16,64,64,0,0,0,0,0");
    ASSERT_EQ(r.exit_code, 0) << r.out;
  }

  std::string token_;
  fs::path dir_;
};

TEST_F(TclctlTest, PlatformsAndARetriedBatchedUpload) {
  create_platform();
  EXPECT_NE(tclctl("platform list").out.find("x16"), std::string::npos);
  EXPECT_NE(tclctl("platform create --name x16 --target llvm --hardware-params 1,2,3,4,5,6,7,8").exit_code, 0);

  const std::string file = write_records(300, "{\"i\": 1}\nnot json\n");
  CliRun first = tclctl("upload --platform x16 --batch-lines 100 --quiet " + file);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const json::value report = json::parse(first.out);
  EXPECT_EQ(report.at("lines").as_int64(), 302);
  EXPECT_EQ(report.at("accepted").as_int64(), 300);
  EXPECT_EQ(report.at("rejected").as_int64(), 2);
  EXPECT_EQ(report.at("batches").as_int64(), 4);

  // CliRun again (an interrupted upload is simply rerun): nothing is stored twice.
  CliRun again = tclctl("upload --platform x16 --batch-lines 100 --quiet " + file);
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(json::parse(again.out).at("replayed_batches").as_int64(), 4);
  const json::value shown = json::parse(tclctl("platform show x16").out);
  const auto& counts = shown.at("counts");
  EXPECT_EQ(counts.at("measurements").as_int64() + counts.at("failed").as_int64(), 300);
}

// tcld refuses a body without a record line (400); a batch of only blank and
// comment lines (here the file's tail) is not sent, and the upload succeeds.
TEST_F(TclctlTest, ABatchOfOnlyCommentsIsNotSent) {
  create_platform();
  const std::string file = write_records(200, "# measured on x16\n\n");
  CliRun r = tclctl("upload --platform x16 --batch-lines 100 --quiet " + file);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json::value report = json::parse(r.out);
  EXPECT_EQ(report.at("accepted").as_int64(), 200);
  EXPECT_EQ(report.at("batches").as_int64(), 2);
}

TEST_F(TclctlTest, PredictLineageAndJobs) {
  create_platform();
  registry::PgPool pool(registry::PgPoolOptions{url_, 1});
  registry::ModelStore models(pool);
  registry::NewVersion v;
  v.platforms = {"x16"};
  v.weights = fresh_checkpoint(3);
  v.metrics_json = R"({"x16": {"top1": 0.875}})";
  registry::CreateVersionOptions o;
  o.make_production_if_unset = true;
  ASSERT_TRUE(models.create_version(v, o));

  const std::string file = write_records(120);
  CliRun scores = tclctl("predict --platform x16 " + file);
  ASSERT_EQ(scores.exit_code, 0) << scores.out;
  std::istringstream in(scores.out);
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    const auto tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    EXPECT_TRUE(std::isfinite(std::stod(line.substr(0, tab)))) << line;
    EXPECT_EQ(line.substr(tab + 1), file + ":" + std::to_string(lines + 1));
  }
  EXPECT_EQ(lines, 120);

  // --top 2: per task, at most two, best first.
  CliRun top = tclctl("predict --platform x16 --top 2 " + file);
  ASSERT_EQ(top.exit_code, 0) << top.out;
  std::istringstream tin(top.out);
  int tasks = 0, ranked = 0;
  double previous = 0;
  for (std::string line; std::getline(tin, line);) {
    if (line.rfind("# ", 0) == 0) {
      ++tasks;
      continue;
    }
    const auto t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    const int rank = std::stoi(line.substr(0, t1));
    const double score = std::stod(line.substr(t1 + 1, t2 - t1 - 1));
    EXPECT_LE(rank, 2);
    if (rank == 2) {
      EXPECT_LE(score, previous) << top.out;
    }
    previous = score;
    ++ranked;
  }
  EXPECT_GE(tasks, 1);
  EXPECT_LE(ranked, 2 * tasks);
  EXPECT_GE(ranked, tasks);
  EXPECT_EQ(tclctl("predict --platform nope " + file).exit_code, 1);

  const CliRun lineage = tclctl("lineage");
  ASSERT_EQ(lineage.exit_code, 0);
  EXPECT_NE(lineage.out.find("production"), std::string::npos) << lineage.out;
  EXPECT_NE(lineage.out.find("x16=0.875"), std::string::npos) << lineage.out;

  // A job started and cancelled from the command line, on a tcld without a
  // training worker: with one, the job (x16 has no measurements) could fail
  // before the cancel arrives.
  tcld_ = std::make_unique<TcldProcess>(url_, std::vector<std::string>{"--train-workers", "0"});
  ASSERT_TRUE(tcld_->start()) << tcld_->log();
  const CliRun started = tclctl("job start --platform x16 --epochs 1 --max-records 100");
  ASSERT_EQ(started.exit_code, 0) << started.out;
  const std::string id = std::to_string(json::parse(started.out).at("id").as_int64());
  EXPECT_EQ(tclctl("job cancel " + id).exit_code, 0);
  const json::value shown = json::parse(tclctl("job show " + id).out);
  EXPECT_EQ(shown.at("id").as_int64(), std::stoll(id));
  EXPECT_EQ(shown.at("state").as_string(), "cancelled") << json::serialize(shown);
  EXPECT_EQ(tclctl("job start").exit_code, 1);
}

// Writes the measured lines of `answers` again as candidates (costs cleared).
std::string as_candidates(const std::string& answers, const fs::path& path) {
  std::ifstream in(answers);
  std::ofstream out(path);
  for (std::string line; std::getline(in, line);) {
    json::value v = json::parse(line);
    json::array& r = v.as_object()["r"].as_array();
    r[0] = json::array{0};
    r[1] = 0;
    out << json::serialize(v) << '\n';
  }
  return path.string();
}

TEST_F(TclctlTest, OnboardPlaysTheLabInRoundsThenTrainsTheFirstVersion) {
  create_platform();
  const std::string answers = write_records(400);
  const std::string candidates = as_candidates(answers, dir_ / "pool.jsonl");
  const std::string state = (dir_ / "onboard.json").string();
  const CliRun run = tclctl("onboard --platform x16 --candidates " + candidates + " --answers " + answers +
                            " --rounds 2 --fraction 0.1 --seed 3 --distill --epochs 1 --state " + state);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  // No model existed: both rounds sampled at random, then a train job made version 1.
  const json::value shown = json::parse(tclctl("platform show x16").out);
  const auto& counts = shown.at("counts");
  const std::int64_t measured = counts.at("measurements").as_int64() + counts.at("failed").as_int64();
  EXPECT_GE(measured, 2 * 4);  // two rounds of ~10% of the pool (≥ 2 per task)
  EXPECT_LT(measured, 400);
  const HttpResult lineage = http_get(tcld_->port(), "/v1/models", token_);
  ASSERT_EQ(lineage.status, 200) << lineage.body;
  EXPECT_NE(lineage.body.find("\"x16\""), std::string::npos) << lineage.body;
  EXPECT_EQ(http_get(tcld_->port(), "/v1/aliases/production", token_).status, 200);
  EXPECT_NE(run.out.find("production"), std::string::npos) << run.out;  // the lineage table

  // Run again: the state file says it is done; nothing new is measured.
  const CliRun again = tclctl("onboard --platform x16 --candidates " + candidates + " --answers " + answers +
                              " --rounds 2 --fraction 0.1 --distill --state " + state);
  ASSERT_EQ(again.exit_code, 0) << again.out;
  const json::value after = json::parse(tclctl("platform show x16").out);
  EXPECT_EQ(after.at("counts").at("measurements").as_int64() + after.at("counts").at("failed").as_int64(), measured);

  // With a model in place, a second platform learns between its rounds: the
  // active column is fine-tuned from production, its schedule chosen by the
  // zero-shot check (auto_schedule).
  ASSERT_EQ(tclctl("platform create --name x16b --target 'llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu' "
                   "--hardware-params 16,64,64,0,0,0,0,0")
                .exit_code,
            0);
  const CliRun second = tclctl("onboard --platform x16b --candidates " + candidates + " --answers " + answers +
                               " --rounds 2 --fraction 0.1 --seed 3 --finetune-epochs 1 --state " +
                               (dir_ / "onboard-b.json").string());
  ASSERT_EQ(second.exit_code, 0) << second.out;
  const HttpResult column = http_get(tcld_->port(), "/v1/aliases/active.x16b", token_);
  ASSERT_EQ(column.status, 200) << column.body;
  const std::string version = std::to_string(column.json().at("version").as_int64());
  const json::value tuned = json::parse(http_get(tcld_->port(), "/v1/models/" + version, token_).body);
  EXPECT_TRUE(tuned.at("config").at("auto_schedule").as_bool()) << json::serialize(tuned);
  const json::value& schedule = tuned.at("training_summary").at("schedule");
  ASSERT_TRUE(schedule.is_object()) << json::serialize(tuned);
  EXPECT_EQ(schedule.at("long").as_bool(), schedule.at("zero_shot_pairwise").to_number<double>() <= 0.5);
}

TEST_F(TclctlTest, AnInterruptedOnboardingFinishesItsOpenRequestWithoutMeasuringTwice) {
  create_platform();
  const std::string answers = write_records(300);
  const std::string candidates = as_candidates(answers, dir_ / "pool.jsonl");
  ASSERT_EQ(tclctl("upload --platform x16 --kind candidates --quiet " + candidates).exit_code, 0);
  // The run that was interrupted: it had opened a request and uploaded part of it.
  const HttpResult opened = http_call(tcld_->port(), HttpCall{"POST", "/v1/platforms/x16/sample-requests",
                                                              R"({"fraction": 0.2, "strategy": "random", "seed": 1})",
                                                              token_, {}, 15000ms});
  ASSERT_EQ(opened.status, 201) << opened.body;
  const std::int64_t id = opened.json().at("id").as_int64();
  const std::size_t picked = opened.json().at("items").as_array().size();
  ASSERT_GT(picked, 4u);
  std::unordered_map<std::string, std::string> by_program;
  {
    std::ifstream in(answers);
    core::RecordParser parser;
    core::Record r;
    for (std::string line; std::getline(in, line);)
      if (parser.parse(line, &r).is_ok()) by_program.emplace(core::program_id(r), line);
  }
  std::string first_part;
  for (std::size_t i = 0; i < 3; ++i)
    first_part += by_program.at(std::string(opened.json().at("items").at(i).at("program_id").as_string())) + "\n";
  ASSERT_EQ(http_call(tcld_->port(), HttpCall{"POST", "/v1/platforms/x16/measurements", first_part, token_, {}, 15000ms})
                .status,
            201);
  const std::string state = (dir_ / "onboard.json").string();
  {
    std::ofstream(state) << R"({"rounds_done": 0, "open_request": ")" << id << R"("})";
  }

  const CliRun resumed = tclctl("onboard --platform x16 --candidates " + candidates + " --answers " + answers +
                                " --rounds 1 --fraction 0.2 --state " + state);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  const json::value request = http_get(tcld_->port(), "/v1/sample-requests/" + std::to_string(id), token_).json();
  EXPECT_EQ(request.at("items_measured").as_int64(), static_cast<std::int64_t>(picked)) << json::serialize(request);
  EXPECT_EQ(request.at("status").as_string(), "completed") << json::serialize(request);
  // Exactly the picked programs are measured, each once: no new request, no repeat.
  const json::value shown = json::parse(tclctl("platform show x16").out);
  EXPECT_EQ(shown.at("counts").at("measurements").as_int64() + shown.at("counts").at("failed").as_int64(),
            static_cast<std::int64_t>(picked));
  const HttpResult next = http_get(tcld_->port(), "/v1/sample-requests/" + std::to_string(id + 1), token_);
  EXPECT_EQ(next.status, 404) << next.body;
}

TEST_F(TclctlTest, OnboardMeasuresThisMachineEndToEnd) {
  // Nothing registered, no model: tclctl registers the machine, generates BERT's
  // operators, measures what each round picks, uploads it and trains version 1.
  const std::string state = (dir_ / "here.state.json").string();
  const CliRun run = tclctl("onboard --platform here --measure-local --models bert --per-task 4 --fraction 0.5 "
                            "--rounds 1 --epochs 1 --state " + state);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(fs::exists(dir_ / "here.pool.jsonl"));
  const json::value shown = json::parse(tclctl("platform show here").out);
  EXPECT_NE(std::string(shown.at("target").as_string()).find("llvm -keys=cpu"), std::string::npos);
  EXPECT_GT(shown.at("hardware_params").at(0).as_int64(), 0);  // cores, from the machine
  const auto& counts = shown.at("counts");
  EXPECT_EQ(counts.at("candidates").as_int64(), counts.at("programs").as_int64());
  EXPECT_GE(counts.at("tasks").as_int64(), 4);
  // Half the pool was picked and every picked program came back measured (or failed, with its error_no).
  const std::int64_t answered = counts.at("measurements").as_int64() + counts.at("failed").as_int64();
  EXPECT_GE(answered, counts.at("programs").as_int64() / 2 - counts.at("tasks").as_int64());
  EXPECT_GT(counts.at("measurements").as_int64(), 0);
  const HttpResult version = http_get(tcld_->port(), "/v1/models/1", token_);
  ASSERT_EQ(version.status, 200) << version.body;
  EXPECT_NE(version.body.find("\"here\""), std::string::npos) << version.body;
}

}  // namespace
}  // namespace tcl::testing
