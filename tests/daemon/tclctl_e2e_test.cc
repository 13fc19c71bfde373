// tclctl, the binary, against a real tcld: platform commands, a batched and
// retried upload (idempotent), predict (plain and --top), lineage and jobs,
// onboarding and tuning a network on this machine;
// text for people by default, the API's JSON with --json.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unordered_map>

#include "core/program_id.h"
#include "core/record.h"
#include "registry/model_store.h"
#include "registry/pg_pool.h"
#include "tests/lib/http_client.h"
#include "tests/lib/model_fixture.h"
#include "tests/lib/model_versions.h"
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
  std::string out;  // stdout
  std::string err;  // stderr (also copied to the test log)
};

// The value of the line "LABEL   value" of an aligned summary; "" when absent.
std::string value_of(const std::string& text, const std::string& label) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(label + "  ", 0) != 0) continue;
    const auto start = line.find_first_not_of(' ', label.size());
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

// A JSON body as one line: tcld ends its bodies with a newline, Prism's
// contract proxy (TCL_CONTRACT_PROXY=1) passes them on without it.
std::string as_line(std::string body) {
  while (!body.empty() && body.back() == '\n') body.pop_back();
  return body + "\n";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

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
    const fs::path err = dir_ / "stderr.txt";
    const std::string cmd = "TCL_URL=http://127.0.0.1:" + std::to_string(tcld_->port()) + " TCL_TOKEN=" + token_ + " " +
                            kTclctl + " " + args + " 2>" + err.string();
    CliRun r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
    const int status = ::pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(err);
    r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::fputs(r.err.c_str(), stderr);
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
  CliRun first = tclctl("--json upload --platform x16 --batch-lines 100 --quiet " + file);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const json::value report = json::parse(first.out);
  EXPECT_EQ(report.at("lines").as_int64(), 302);
  EXPECT_EQ(report.at("accepted").as_int64(), 300);
  EXPECT_EQ(report.at("rejected").as_int64(), 2);
  EXPECT_EQ(report.at("batches").as_int64(), 4);

  // CliRun again (an interrupted upload is simply rerun): nothing is stored twice.
  CliRun again = tclctl("--json upload --platform x16 --batch-lines 100 --quiet " + file);
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(json::parse(again.out).at("replayed_batches").as_int64(), 4);
  const json::value shown = json::parse(tclctl("--json platform show x16").out);
  const auto& counts = shown.at("counts");
  EXPECT_EQ(counts.at("measurements").as_int64() + counts.at("failed").as_int64(), 300);
}

// tcld refuses a body without a record line (400); a batch of only blank and
// comment lines (here the file's tail) is not sent, and the upload succeeds.
TEST_F(TclctlTest, ABatchOfOnlyCommentsIsNotSent) {
  create_platform();
  const std::string file = write_records(200, "# measured on x16\n\n");
  CliRun r = tclctl("--json upload --platform x16 --batch-lines 100 --quiet " + file);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json::value report = json::parse(r.out);
  EXPECT_EQ(report.at("accepted").as_int64(), 200);
  EXPECT_EQ(report.at("batches").as_int64(), 2);
}

TEST_F(TclctlTest, PredictLineageAndJobs) {
  create_platform();
  registry::PgPool pool(registry::PgPoolOptions{url_, 1});
  registry::ModelStore models(pool);
  ASSERT_NE(tcl::testing::add_version(models, fresh_checkpoint(3), {.metrics_json = R"({"x16": {"top1": 0.875}})"}), 0);

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

  // A distilled version the gate refused: the table says why, and the
  // figures are each platform's standing split's.
  registry::NewVersion refused;
  refused.parent = 1;
  refused.platforms = {"x16"};
  refused.weights = fresh_checkpoint(4);
  refused.status = registry::VersionStatus::kCandidate;
  refused.metrics_json = R"({"x16": {"top1": 0.5, "standing_split": {"top1": 0.25, "random_top1": 0.5}}})";
  registry::CreateVersionOptions gate;
  gate.status_reasons_json =
      R"({"promote": false, "reasons": ["x16 (new): 3 tasks ..."], "blocking": ["x16 (new): top-1 mean 0.250 on )"
      R"(3 held-out tasks, not above the teacher's zero-shot 0.400"]})";
  ASSERT_TRUE(models.create_version(refused, gate));

  const CliRun lineage = tclctl("lineage");
  ASSERT_EQ(lineage.exit_code, 0);
  EXPECT_NE(lineage.out.find("production"), std::string::npos) << lineage.out;
  EXPECT_NE(lineage.out.find("x16=0.875*"), std::string::npos) << lineage.out;  // an old version's own set
  EXPECT_NE(lineage.out.find("x16=0.250<"), std::string::npos) << lineage.out;
  EXPECT_NE(lineage.out.find("\nversion 2 stays a candidate: x16 (new): top-1 mean 0.250 on 3 held-out tasks"),
            std::string::npos)
      << lineage.out;

  // A job started and cancelled from the command line, on a tcld without a
  // training worker: with one, the job (x16 has no measurements) could fail
  // before the cancel arrives.
  tcld_ = std::make_unique<TcldProcess>(url_, std::vector<std::string>{"--train-workers", "0"});
  ASSERT_TRUE(tcld_->start()) << tcld_->log();
  const CliRun started = tclctl("--json job start --platform x16 --epochs 1 --max-records 100");
  ASSERT_EQ(started.exit_code, 0) << started.out;
  const std::string id = std::to_string(json::parse(started.out).at("id").as_int64());
  EXPECT_EQ(tclctl("job cancel " + id).exit_code, 0);
  const json::value shown = json::parse(tclctl("--json job show " + id).out);
  EXPECT_EQ(shown.at("id").as_int64(), std::stoll(id));
  EXPECT_EQ(shown.at("state").as_string(), "cancelled") << json::serialize(shown);
  // For people: the same job as aligned text.
  const CliRun text = tclctl("job show " + id);
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_EQ(value_of(text.out, "job"), id) << text.out;
  EXPECT_EQ(value_of(text.out, "state"), "cancelled") << text.out;
  EXPECT_EQ(value_of(text.out, "kind"), "train") << text.out;
  EXPECT_EQ(value_of(text.out, "platform"), "x16") << text.out;
  EXPECT_NE(value_of(text.out, "options").find("epochs=1"), std::string::npos) << text.out;
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
  const json::value shown = json::parse(tclctl("--json platform show x16").out);
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
  const json::value after = json::parse(tclctl("--json platform show x16").out);
  EXPECT_EQ(after.at("counts").at("measurements").as_int64() + after.at("counts").at("failed").as_int64(), measured);

  // With a model in place, a second platform learns between its rounds: the
  // active column is fine-tuned from production, its schedule chosen by the
  // zero-shot check (auto_schedule).
  ASSERT_EQ(tclctl("platform create --name x16b --target 'llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu' "
                   "--hardware-params 16,64,64,0,0,0,0,0")
                .exit_code,
            0);
  const CliRun second =
      tclctl("onboard --platform x16b --candidates " + candidates + " --answers " + answers +
             " --rounds 2 --fraction 0.1 --seed 3 --finetune-epochs 1 --state " + (dir_ / "onboard-b.json").string());
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
  const HttpResult opened = http_call(tcld_->port(), HttpCall{"POST",
                                                              "/v1/platforms/x16/sample-requests",
                                                              R"({"fraction": 0.2, "strategy": "random", "seed": 1})",
                                                              token_,
                                                              {},
                                                              15000ms});
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
  ASSERT_EQ(
      http_call(tcld_->port(), HttpCall{"POST", "/v1/platforms/x16/measurements", first_part, token_, {}, 15000ms})
          .status,
      201);
  const std::string state = (dir_ / "onboard.json").string();
  { std::ofstream(state) << R"({"rounds_done": 0, "open_request": ")" << id << R"("})"; }

  const CliRun resumed = tclctl("onboard --platform x16 --candidates " + candidates + " --answers " + answers +
                                " --rounds 1 --fraction 0.2 --state " + state);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  const json::value request = http_get(tcld_->port(), "/v1/sample-requests/" + std::to_string(id), token_).json();
  EXPECT_EQ(request.at("items_measured").as_int64(), static_cast<std::int64_t>(picked)) << json::serialize(request);
  EXPECT_EQ(request.at("status").as_string(), "completed") << json::serialize(request);
  // Exactly the picked programs are measured, each once: no new request, no repeat.
  const json::value shown = json::parse(tclctl("--json platform show x16").out);
  EXPECT_EQ(shown.at("counts").at("measurements").as_int64() + shown.at("counts").at("failed").as_int64(),
            static_cast<std::int64_t>(picked));
  const HttpResult next = http_get(tcld_->port(), "/v1/sample-requests/" + std::to_string(id + 1), token_);
  EXPECT_EQ(next.status, 404) << next.body;
}

TEST_F(TclctlTest, OnboardMeasuresThisMachineEndToEnd) {
  // Nothing registered, no model: tclctl registers the machine, generates BERT's
  // operators, measures what each round picks, uploads it and trains version 1.
  const std::string state = (dir_ / "here.state.json").string();
  const CliRun run = tclctl(
      "onboard --platform here --measure-local --models bert --per-task 4 --fraction 0.5 "
      "--rounds 1 --epochs 1 --state " +
      state);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  // It ends saying what the user got: the lineage's first version, production.
  EXPECT_NE(run.out.find("\nversion 1 is production now"), std::string::npos) << run.out;
  EXPECT_TRUE(fs::exists(dir_ / "here.pool.jsonl"));
  const json::value shown = json::parse(tclctl("--json platform show here").out);
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

TEST_F(TclctlTest, OnboardMeasuresThroughALabCommand) {
  // The flow of a lab on another machine (the README's GPU tour): each chunk of picks goes to a
  // command that measures it there, and what it measured is uploaded.
  const std::string measure = std::string(TCL_BINARY_DIR) + "/measure/tcl-measure";
  const std::string pool = (dir_ / "lab-pool.jsonl").string();
  ASSERT_EQ(std::system((measure + " candidates --model bert --per-task 4 -o " + pool + " 2>/dev/null").c_str()), 0);
  // The platform as the pool's records describe it (this machine).
  std::string first;
  std::getline(std::ifstream(pool), first);
  auto task = core::RecordParser().parse(first);
  ASSERT_TRUE(task && task->hardware_params) << first;
  const auto& hp = *task->hardware_params;
  ASSERT_EQ(tclctl("platform create --name lab --target '" + task->target + "' --hardware-params " +
                   std::to_string(hp.num_cores) + "," + std::to_string(hp.vector_unit_bytes) + "," +
                   std::to_string(hp.cache_line_bytes) + ",0,0,0,0,0")
                .exit_code,
            0);
  // A failing command fails the round, says why, and leaves the request open for a rerun.
  const std::string state = (dir_ / "lab.state.json").string();
  const CliRun broken = tclctl("onboard --platform lab --candidates " + pool +
                               " --lab-command 'echo no GPU here >&2; false' --fraction 0.5 --state " + state);
  EXPECT_NE(broken.exit_code, 0);
  EXPECT_NE(broken.err.find("no GPU here"), std::string::npos) << broken.err;
  const json::value open = json::parse(tclctl("--json platform show lab").out);
  EXPECT_EQ(open.at("counts").at("measurements").as_int64(), 0);

  // The lab is scripts/gpu/remote_lab.sh, its ssh and scp played on this machine (tests/daemon/lab).
  const std::string src = TCL_SOURCE_DIR;
  const std::string lab = "SSH=" + src + "/tests/daemon/lab/fake_ssh SCP=" + src +
                          "/tests/daemon/lab/fake_scp TCL_MEASURE=" + measure + " MEASURE_FLAGS=\"--repeat 2\" " + src +
                          "/scripts/gpu/remote_lab.sh lab-box {in} {out}";
  const CliRun run = tclctl("onboard --platform lab --candidates " + pool + " --lab-command '" + lab +
                            "' --fraction 0.5 --state " + state);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("resuming"), std::string::npos) << run.err;
  const json::value shown = json::parse(tclctl("--json platform show lab").out);
  const auto& counts = shown.at("counts");
  EXPECT_GT(counts.at("measurements").as_int64(), 0);
  EXPECT_GE(counts.at("measurements").as_int64() + counts.at("failed").as_int64(),
            counts.at("programs").as_int64() / 2 - counts.at("tasks").as_int64());
  const HttpResult request = http_get(tcld_->port(), "/v1/sample-requests/1", token_);
  ASSERT_EQ(request.status, 200) << request.body;
  EXPECT_EQ(request.json().at("status").as_string(), "completed") << request.body;
}

// What a person reads: platform show and upload as aligned text, a sample
// request's summary and picks, a job's progress as one line per change when
// piped; and with --json, the API's JSON byte for byte (what scripts read).
TEST_F(TclctlTest, TuneATwoTaskNetworkUploadsEveryRoundResumesAndUsesTheLineage) {
  // A network of two small operators (the second twice), tuned on this machine: every round is
  // measured here and uploaded to the platform, which tclctl registers from the machine.
  const std::string network =
      "--task '[\"tcl.matmul\", 16, 32, 16]' --task '[\"tcl.conv2d_nhwc\", 1, 8, 8, 8, 8, 3, 3, 1, 1]*2' "
      "--per-round 6 --population 64 --platform tuned";
  const std::string dir = (dir_ / "tune-online").string();
  const CliRun first = tclctl("tune " + network + " --model online --budget 24 --dir " + dir);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_NE(first.out.find("measured      24 in 4 rounds"), std::string::npos) << first.out;
  EXPECT_NE(first.err.find("round 4"), std::string::npos) << first.err;  // the progress line
  EXPECT_NE(first.out.find("warm-up       a whole round (the online model has no lineage"), std::string::npos)
      << first.out;
  auto answered = [&] {
    const json::value shown = json::parse(tclctl("--json platform show tuned").out);
    return shown.at("counts").at("measurements").as_int64() + shown.at("counts").at("failed").as_int64();
  };
  EXPECT_EQ(answered(), 24);
  // The curve: the network latency once both tasks have a program, never rising after.
  std::vector<double> curve;
  for (const std::string& row : lines_of(read_text(dir + "/rounds.csv"))) {
    std::vector<std::string> cells;
    std::istringstream in(row);
    for (std::string c; std::getline(in, c, ',');) cells.push_back(c);
    if (cells.size() > 5 && cells[0] != "round" && !cells[5].empty()) curve.push_back(std::stod(cells[5]));
  }
  ASSERT_GE(curve.size(), 2u);
  for (std::size_t i = 1; i < curve.size(); ++i) EXPECT_LE(curve[i], curve[i - 1]);
  EXPECT_EQ(lines_of(read_text(dir + "/best.jsonl")).size(), 2u);  // one TVM record per task

  // The same command with a larger budget resumes: 2 more rounds, 12 more uploads, nothing measured twice.
  const CliRun more = tclctl("tune " + network + " --model online --budget 36 --dir " + dir);
  ASSERT_EQ(more.exit_code, 0) << more.out << more.err;
  EXPECT_NE(more.out.find("measured      36 in 6 rounds (4 resumed)"), std::string::npos) << more.out;
  EXPECT_EQ(answered(), 36);
  // The run itself, stored after every round it uploaded: one row (the resumed run updated it), its 6
  // rounds with the measurements so far and the curve, for the console.
  const HttpResult listed = http_get(tcld_->port(), "/v1/platforms/tuned/tuning-runs", token_);
  ASSERT_EQ(listed.status, 200) << listed.body;
  const json::value runs = json::parse(listed.body);
  ASSERT_EQ(runs.at("runs").as_array().size(), 1u) << listed.body;
  const json::object& run = runs.at("runs").at(0).as_object();
  EXPECT_EQ(run.at("id").as_string().subview().substr(0, 5), "tune-");
  EXPECT_EQ(run.at("model").as_string(), "online");
  const json::array& rounds = run.at("rounds").as_array();
  ASSERT_EQ(rounds.size(), 6u) << listed.body;
  for (std::size_t i = 0; i < rounds.size(); ++i) EXPECT_EQ(rounds[i].at("measured").as_int64(), 6 * int(i + 1));
  EXPECT_NEAR(rounds[3].at("network_seconds").to_number<double>(), curve.back(),
              1e-9 * curve.back());  // rounds.csv's 4th row
  EXPECT_TRUE(rounds[5].at("network_seconds").is_number());

  // The lineage's first version, trained on what the tuner uploaded, then scores the next run
  // (lineage+online: the default model).
  ASSERT_EQ(tclctl("job start --platform tuned --epochs 1 --wait").exit_code, 0);
  const CliRun lineage = tclctl("tune " + network + " --budget 12 --dir " + dir + "-lineage");
  ASSERT_EQ(lineage.exit_code, 0) << lineage.out << lineage.err;
  EXPECT_NE(lineage.out.find("model         lineage+online"), std::string::npos) << lineage.out;
  // --warmup auto: the lineage has learned this platform, so each task's first round measures 2.
  EXPECT_NE(lineage.out.find("warm-up       2 a task (the lineage has learned tuned)"), std::string::npos)
      << lineage.out;
  EXPECT_NE(lineage.out.find("measured      12 in 4 rounds"), std::string::npos) << lineage.out;  // 2, 2, 6, 2
  EXPECT_GT(answered(), 36);  // new programs (some may repeat the first run's: uploads dedupe them)
  // On a platform the lineage has not learned (its scores a zero-shot guess), auto keeps whole rounds.
  const CliRun elsewhere = tclctl(
      "tune --task '[\"tcl.matmul\", 16, 32, 16]' --per-round 6 --population 64 "
      "--platform elsewhere --budget 6 --upload 0 --dir " +
      dir + "-elsewhere");
  ASSERT_EQ(elsewhere.exit_code, 0) << elsewhere.out << elsewhere.err;
  EXPECT_NE(elsewhere.out.find("warm-up       a whole round (the lineage has not learned elsewhere)"),
            std::string::npos)
      << elsewhere.out;
  // A folder started with whole first rounds keeps them when the same folder is tuned on under auto.
  const std::string whole = network + " --dir " + dir + "-whole";
  ASSERT_EQ(tclctl("tune " + whole + " --budget 6 --warmup 0").exit_code, 0);
  const CliRun resumed = tclctl("tune " + whole + " --budget 12");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.out.find("warm-up       a whole round (the run in " + dir + "-whole started so)"),
            std::string::npos)
      << resumed.out;
  EXPECT_NE(resumed.out.find("measured      12 in 2 rounds (1 resumed)"), std::string::npos) << resumed.out;
  // Without a server for the lineage, the lineage models are refused before anything is measured.
  EXPECT_NE(
      tclctl("tune --task '[\"tcl.matmul\", 16, 32, 16]' --model lineage --upload 0 --dir " + dir + "-x").exit_code, 0);
}

TEST_F(TclctlTest, TextForPeopleAndJsonForScripts) {
  // A short lease: the worker's heartbeat (lease/4) carries each epoch's progress.
  tcld_ = std::make_unique<TcldProcess>(url_, std::vector<std::string>{"--job-lease-ms", "2000"});
  ASSERT_TRUE(tcld_->start()) << tcld_->log();
  const CliRun created = tclctl(
      "platform create --name x16 --target 'llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu' "
      "--hardware-params 16,64,64,0,0,0,0,0 --description 'a test box'");
  ASSERT_EQ(created.exit_code, 0) << created.out;
  EXPECT_EQ(value_of(created.out, "name"), "x16") << created.out;
  EXPECT_EQ(value_of(created.out, "description"), "a test box") << created.out;

  // A pool of 400 programs, the first 200 measured.
  const std::string candidates = as_candidates(write_records(400), dir_ / "pool.jsonl");
  const CliRun uploaded = tclctl("upload --platform x16 --quiet " + write_records(200));
  ASSERT_EQ(uploaded.exit_code, 0) << uploaded.out;
  EXPECT_EQ(value_of(uploaded.out, "lines"), "200") << uploaded.out;
  EXPECT_EQ(value_of(uploaded.out, "rejected"), "0") << uploaded.out;

  const CliRun shown = tclctl("platform show x16");
  ASSERT_EQ(shown.exit_code, 0) << shown.out;
  EXPECT_EQ(value_of(shown.out, "name"), "x16") << shown.out;
  EXPECT_EQ(value_of(shown.out, "target"), "llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu") << shown.out;
  EXPECT_EQ(value_of(shown.out, "hardware").rfind("16,64,64,0,0,0,0,0", 0), 0u) << shown.out;
  EXPECT_EQ(value_of(shown.out, "onboarding"), "measuring") << shown.out;
  EXPECT_EQ(shown.out.find('{'), std::string::npos) << shown.out;
  // Every value starts in one column.
  std::size_t column = std::string::npos;
  for (const std::string& line : lines_of(shown.out)) {
    const std::size_t c = line.find_first_not_of(' ', line.find(' '));
    if (column == std::string::npos) column = c;
    EXPECT_EQ(c, column) << shown.out;
  }
  // --json: the daemon's answer as it came, what a script parses.
  const HttpResult api = http_get(tcld_->port(), "/v1/platforms/x16", token_);
  ASSERT_EQ(api.status, 200);
  const CliRun machine = tclctl("--json platform show x16");
  ASSERT_EQ(machine.exit_code, 0);
  EXPECT_EQ(machine.out, as_line(api.body));
  const json::value parsed = json::parse(machine.out);
  EXPECT_EQ(value_of(shown.out, "measurements"),
            std::to_string(parsed.at("counts").at("measurements").as_int64()) + " (+ " +
                std::to_string(parsed.at("counts").at("failed").as_int64()) + " failed)");

  // A job, piped: one progress line per change, never redrawn in place; then the job as text.
  const CliRun trained = tclctl("job start --platform x16 --epochs 3 --wait");
  ASSERT_EQ(trained.exit_code, 0) << trained.out << trained.err;
  EXPECT_EQ(trained.err.find('\r'), std::string::npos) << trained.err;
  const std::vector<std::string> progress = lines_of(trained.err);
  ASSERT_GE(progress.size(), 2u) << trained.err;
  std::vector<std::string> epochs_seen;
  for (std::size_t i = 0; i < progress.size(); ++i) {
    EXPECT_EQ(progress[i].rfind("job 1 ", 0), 0u) << trained.err;
    EXPECT_NE(progress[i].find(" elapsed "), std::string::npos) << trained.err;
    // One line per change: no two lines alike but for the time.
    const std::string what = progress[i].substr(0, progress[i].find("  elapsed "));
    if (i > 0) {
      EXPECT_NE(what, progress[i - 1].substr(0, progress[i - 1].find("  elapsed "))) << trained.err;
    }
    const auto e = what.find("epoch ");
    if (e != std::string::npos) epochs_seen.push_back(what.substr(e, what.find(' ', e + 6) - e));
  }
  EXPECT_EQ(progress.back().rfind("job 1 succeeded  epoch ", 0), 0u) << trained.err;
  EXPECT_NE(progress.back().find("  loss "), std::string::npos) << trained.err;
  EXPECT_EQ(progress.back().find(" eta "), std::string::npos) << trained.err;
  ASSERT_FALSE(epochs_seen.empty()) << trained.err;
  EXPECT_TRUE(std::is_sorted(epochs_seen.begin(), epochs_seen.end())) << trained.err;
  EXPECT_EQ(value_of(trained.out, "state"), "succeeded") << trained.out;
  EXPECT_EQ(value_of(trained.out, "result"), "model version 1") << trained.out;
  // The same job for scripts: its JSON, numbers in plain decimal.
  const CliRun job = tclctl("--json job show 1");
  ASSERT_EQ(job.exit_code, 0);
  EXPECT_EQ(job.out, as_line(http_get(tcld_->port(), "/v1/jobs/1", token_).body));
  const json::value& loss = json::parse(job.out).at("progress").at("loss");
  ASSERT_TRUE(loss.is_double()) << job.out;
  EXPECT_EQ(job.out.find("E0"), std::string::npos) << job.out;
  EXPECT_NE(job.out.find("\"loss\":"), std::string::npos);

  // A sample request: its summary and the picks, the records in the file.
  ASSERT_EQ(tclctl("upload --platform x16 --kind candidates --quiet " + candidates).exit_code, 0);
  const std::string to_measure = (dir_ / "to-measure.jsonl").string();
  const CliRun sampled = tclctl("sample --platform x16 --budget 6 --strategy rdu --seed 1 -o " + to_measure);
  ASSERT_EQ(sampled.exit_code, 0) << sampled.out;
  EXPECT_EQ(value_of(sampled.out, "sample request"), "1") << sampled.out;
  EXPECT_EQ(value_of(sampled.out, "strategy"), "rdu") << sampled.out;
  EXPECT_EQ(value_of(sampled.out, "model"), "version 1") << sampled.out;
  EXPECT_EQ(value_of(sampled.out, "picked").rfind("6 of a pool of ", 0), 0u) << sampled.out;
  const std::vector<std::string> rows = lines_of(sampled.out.substr(sampled.out.find("RANK")));
  ASSERT_EQ(rows.size(), 7u) << sampled.out;  // the header, then one row per pick
  for (std::size_t k = 1; k < rows.size(); ++k) EXPECT_EQ(std::stoi(rows[k]), static_cast<int>(k - 1)) << rows[k];
  std::ifstream records(to_measure);
  EXPECT_EQ(lines_of(std::string(std::istreambuf_iterator<char>(records), {})).size(), 6u);
}

}  // namespace
}  // namespace tcl::testing
