// Continual distillation through the real tcld: a first platform trained,
// a second one distilled into the lineage (parent, platforms, Fisher,
// per-platform metrics and the comparison with the parent, the gate's
// verdict), rollback through the alias, and the no-old-measurement proof:
// with every cost of the old platform's measurements changed, the same
// distill job gives bit-identical weights (its programs are the old
// platforms' bank, DistillTargets::old_bank; its measurements are never read
// for training).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/line_reader.h"
#include "core/program_id.h"
#include "core/record.h"
#include "tests/lib/http_client.h"
#include "tests/lib/pg_cluster.h"
#include "tests/lib/tcld_env.h"
#include "tests/lib/tcld_process.h"

namespace tcl::testing {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

const std::string kData = std::string(TCL_SOURCE_DIR) + "/../shared/data";

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

class DistillTest : public TcldEnvTest {
 protected:
  void SetUp() override {}
  // One torch thread: the same job gives the same bytes.
  void start(std::vector<std::string> args = {"--train-threads", "1"}) {
    ASSERT_NO_FATAL_FAILURE(start_tcld(std::move(args)));
    token_ = token("ops", "admin");
    ASSERT_EQ(call("POST", "/v1/platforms",
                   R"({"name": "x16", "target": "llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu",
                       "hardware_params": [16, 64, 64, 0, 0, 0, 0, 0]})")
                  .status,
              201);
    ASSERT_EQ(
        call("POST", "/v1/platforms",
             R"({"name": "t4", "target": "cuda -keys=cuda,gpu -arch=sm_75 -max_num_threads=1024 -thread_warp_size=32",
                       "hardware_params": [-1, 16, 64, 49152, 2147483647, 1024, 8, 32]})")
            .status,
        201);
    ASSERT_EQ(call("POST", "/v1/platforms/x16/measurements", lines_of("x86-16c", 40, 600)).status, 201);
    ASSERT_EQ(call("POST", "/v1/platforms/t4/measurements", lines_of("gpu-2080ti", 60, 600)).status, 201);
  }
  HttpResult call(const std::string& method, const std::string& target, const std::string& body = "") {
    return http_call(tcld_->port(), HttpCall{method, target, body, token_, {}, 60s});
  }
  // Starts a job and waits for it to end; returns its final state.
  json::value run_job(const std::string& platform, const std::string& options) {
    auto started = call("POST", "/v1/platforms/" + platform + "/jobs", options);
    EXPECT_EQ(started.status, 202) << started.body;
    const std::string id = std::to_string(started.json().at("id").as_int64());
    json::value job;
    const auto deadline = std::chrono::steady_clock::now() + 240s;
    while (std::chrono::steady_clock::now() < deadline) {
      job = call("GET", "/v1/jobs/" + id).json();
      const auto state = job.at("state").as_string();
      if (state == "succeeded" || state == "failed" || state == "cancelled") break;
      std::this_thread::sleep_for(200ms);
    }
    return job;
  }
  // Moves production back to `version` (a rollback); the HTTP status.
  int roll_back_production_to(std::int64_t version) {
    return call("PUT", "/v1/aliases/production",
                R"({"version": )" + std::to_string(version) + R"(, "reason": "rollback"})")
        .status;
  }
  // POST /v1/predict of `programs` (JSON lines) for `platform` by version `v`: the answer.
  json::value predict(const std::string& programs, const std::string& platform, std::int64_t v) {
    json::array records;
    for (std::size_t at = 0, end = 0; at < programs.size(); at = end + 1) {
      end = programs.find('\n', at);
      records.push_back(json::parse(std::string_view(programs).substr(at, end - at)));
    }
    const std::string body = json::serialize(
        json::object{{"platform", platform}, {"model", std::to_string(v)}, {"records", std::move(records)}});
    HttpResult r = call("POST", "/v1/predict", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }
  // tcld with x16's first version trained, then restarted without a train
  // worker: the next job waits for the test's own worker processes.
  void start_without_workers_after_a_train() {
    start({"--train-workers", "1", "--train-threads", "1"});
    ASSERT_EQ(run_job("x16", R"({"kind": "train", "epochs": 1})").at("state").as_string(), "succeeded");
    tcld_->stop();
    tcld_ = std::make_unique<TcldProcess>(url_, std::vector<std::string>{"--train-workers", "0"});
    ASSERT_TRUE(tcld_->start()) << tcld_->log();
  }
  std::string sha_of(std::int64_t version) {
    return std::string(call("GET", "/v1/models/" + std::to_string(version)).json().at("weights_sha256").as_string());
  }

  std::string token_;
};

TEST_F(DistillTest, DistillsANewPlatformWithoutTouchingOldData) {
  start();
  // Without a production version there is nothing to distill into.
  json::value none = run_job("t4", R"({"kind": "distill", "epochs": 1})");
  EXPECT_EQ(none.at("state").as_string(), "failed");
  EXPECT_NE(json::serialize(none.at("error")).find("production"), std::string::npos) << json::serialize(none);

  json::value first = run_job("x16", R"({"kind": "train", "epochs": 2, "seed": 1})");
  ASSERT_EQ(first.at("state").as_string(), "succeeded") << json::serialize(first);
  // A train job's stored options name no distill method or choice (the worker would refuse them).
  EXPECT_FALSE(first.at("options").as_object().contains("choice")) << json::serialize(first);
  EXPECT_FALSE(first.at("options").as_object().contains("method")) << json::serialize(first);
  const std::int64_t v1 = first.at("result_version").as_int64();
  EXPECT_TRUE(call("GET", "/v1/models/" + std::to_string(v1)).json().at("has_fisher").as_bool());

  // The unmeasured pool: candidates of t4, some of them measured already
  // (those are not distillation inputs).
  const std::string pool = lines_of("gpu-2080ti", 30, 500);
  ASSERT_EQ(call("POST", "/v1/platforms/t4/candidates", pool).status, 201);
  std::int64_t pool_unmeasured = 0;
  {
    const auto program_ids = [](const std::string& text) {
      std::set<std::string> ids;
      core::RecordParser parser;
      core::Record r;
      for (std::size_t at = 0, end = 0; at < text.size(); at = end + 1) {
        end = text.find('\n', at);
        EXPECT_TRUE(parser.parse(std::string_view(text).substr(at, end - at), &r).is_ok());
        ids.insert(core::program_id(r));
      }
      return ids;
    };
    const std::set<std::string> measured = program_ids(lines_of("gpu-2080ti", 60, 600));
    const std::set<std::string> candidates = program_ids(pool);
    for (const std::string& id : candidates) pool_unmeasured += measured.count(id) ? 0 : 1;
    ASSERT_GT(pool_unmeasured, 0);
    ASSERT_LT(pool_unmeasured, static_cast<std::int64_t>(candidates.size()));
    ASSERT_EQ(call("GET", "/v1/platforms/t4").json().at("counts").at("candidates").as_int64(),
              static_cast<std::int64_t>(candidates.size()));
  }

  const std::string distill = R"({"kind": "distill", "method": "student", "epochs": 1, "column_epochs": 1, "seed": 1})";
  json::value d = run_job("t4", distill);
  ASSERT_EQ(d.at("state").as_string(), "succeeded") << json::serialize(d);
  const std::int64_t v2 = d.at("result_version").as_int64();
  const json::value version = call("GET", "/v1/models/" + std::to_string(v2)).json();
  EXPECT_EQ(version.at("parent").as_int64(), v1);
  ASSERT_EQ(version.at("platforms").as_array().size(), 2u);
  EXPECT_EQ(version.at("platforms").as_array()[0].as_string(), "x16");
  EXPECT_EQ(version.at("platforms").as_array()[1].as_string(), "t4");
  EXPECT_TRUE(version.at("has_fisher").as_bool());
  EXPECT_EQ(version.at("weights_size").as_int64(),
            call("GET", "/v1/models/" + std::to_string(v1)).json().at("weights_size").as_int64());  // constant size
  const json::value& metrics = version.at("metrics");
  for (const char* p : {"x16", "t4"}) {
    ASSERT_TRUE(metrics.at(p).at("top1").is_number()) << json::serialize(metrics);
    ASSERT_TRUE(metrics.at("versus_parent").at(p).at("parent_top1").is_number()) << json::serialize(metrics);
  }
  EXPECT_EQ(version.at("config").at("distill").at("method").as_string(), "student");
  EXPECT_EQ(version.at("config").at("distill").at("old_platforms").as_int64(), 1);
  EXPECT_EQ(version.at("config").at("learning_rate").to_number<double>(),
            0.002);  // the student's, by default (trainer::kDistillStudentLearningRate)
  // The column weight is per old platform: with one, the term's is the option's (1).
  EXPECT_EQ(version.at("config").at("distill").at("column_weight").to_number<double>(), 1.0);
  EXPECT_EQ(version.at("config").at("distill").at("column_term_weight").to_number<double>(), 1.0);
  // The old platforms' bank: x16's measured programs (each once; failed ones left out), all of them under the cap.
  std::int64_t x16_programs = 0;
  {
    std::set<std::string> ids;
    core::RecordParser parser;
    core::Record r;
    const std::string text = lines_of("x86-16c", 40, 600);
    for (std::size_t at = 0, end = 0; at < text.size(); at = end + 1) {
      end = text.find('\n', at);
      ASSERT_TRUE(parser.parse(std::string_view(text).substr(at, end - at), &r).is_ok());
      if (!core::measurement_failed(r.error_no, r.costs)) ids.insert(core::program_id(r));
    }
    x16_programs = static_cast<std::int64_t>(ids.size());
  }
  EXPECT_EQ(version.at("config").at("distill").at("old_bank_read").as_int64(), x16_programs);
  EXPECT_GT(version.at("config").at("distill").at("old_bank_programs").as_int64(), 0);
  EXPECT_EQ(version.at("config").at("distill").at("old_bank_ratio").to_number<double>(), 1.0);
  EXPECT_EQ(version.at("config").at("distill").at("unlabeled_read").as_int64(), pool_unmeasured);
  // Inputs outside t4's evaluation split (and in tasks of two or more).
  EXPECT_GT(version.at("config").at("distill").at("unlabeled_programs").as_int64(), 0);
  EXPECT_LE(version.at("config").at("distill").at("unlabeled_programs").as_int64(), pool_unmeasured);
  // The gate's verdict is recorded with its reasons, and production follows it.
  const std::string status(version.at("status").as_string());
  ASSERT_TRUE(status == "promoted" || status == "candidate") << status;
  const json::array& reasons = version.at("status_reasons").at("reasons").as_array();
  ASSERT_EQ(reasons.size(), 2u) << json::serialize(version);
  // Each reason says what was measured on how many tasks, and the verdict:
  // the old platform on every measured task, the new one on its standing split.
  const std::string old_reason(reasons[0].as_string()), new_reason(reasons[1].as_string());
  std::printf("[ gate ] %s\n[ gate ] %s\n", old_reason.c_str(), new_reason.c_str());
  const std::int64_t x16_tasks = metrics.at("versus_parent").at("x16").at("tasks").as_int64();
  EXPECT_GE(x16_tasks, 10) << json::serialize(metrics);
  for (const std::string& part : {"x16: " + std::to_string(x16_tasks) + " tasks (every measured task, at most 256",
                                  std::string("top-1 mean "), std::string(" se), sum "), std::string("tuning proxy"),
                                  std::string("margins 0.0100 top-1, 10% tuning proxy: ")}) {
    EXPECT_NE(old_reason.find(part), std::string::npos) << part << " in " << old_reason;
  }
  EXPECT_TRUE(old_reason.find(": kept") != std::string::npos || old_reason.find(": forgot") != std::string::npos)
      << old_reason;
  EXPECT_EQ(new_reason.rfind("t4 (new): ", 0), 0u) << new_reason;
  EXPECT_NE(new_reason.find("tasks (its standing split"), std::string::npos) << new_reason;
  // The comparison with the parent carries the tuning proxy and the standing split apart.
  const json::value& x16 = metrics.at("versus_parent").at("x16");
  for (const char* key : {"parent_tuning_proxy", "tuning_proxy"}) {
    EXPECT_TRUE(x16.at(key).is_number() || x16.at(key).is_null()) << json::serialize(x16);
  }
  EXPECT_TRUE(x16.at("change_se").is_number()) << json::serialize(x16);
  EXPECT_LT(x16.at("standing_split").at("tasks").as_int64(), x16_tasks) << json::serialize(x16);
  EXPECT_EQ(metrics.at("x16").at("eval_tasks").as_int64(), x16_tasks) << json::serialize(metrics);
  const std::int64_t production = call("GET", "/v1/aliases/production").json().at("version").as_int64();
  EXPECT_EQ(production, status == "promoted" ? v2 : v1);

  // Rollback (or keep) production on v1, change every cost of the old
  // platform's measurements (the first one of each record, in its stored
  // line and its column), distill again: the weights are bit-identical.
  ASSERT_EQ(roll_back_production_to(v1), 200);
  const std::string sql =
      "psql -q '" + url_ +
      "' -c \"UPDATE measurements SET record = regexp_replace(record, '\\\"r\\\": *\\[\\[[^],]*', "
      "'\\\"r\\\": [[0.123'), costs[1] = 0.123 WHERE platform_id = (SELECT id FROM platforms WHERE name = "
      "'x16') AND NOT failed\" >/dev/null";
  ASSERT_EQ(std::system(sql.c_str()), 0);
  {
    const std::string lines = call("GET", "/v1/platforms/x16/measurements").body;
    EXPECT_NE(lines.find("[[0.123"), std::string::npos);  // the stored lines themselves changed
  }
  json::value again = run_job("t4", distill);
  ASSERT_EQ(again.at("state").as_string(), "succeeded") << json::serialize(again);
  const std::int64_t v3 = again.at("result_version").as_int64();
  EXPECT_EQ(sha_of(v3), sha_of(v2));
  // Only the measuring changed: the gate judged x16 on the new costs.
  const json::value v3_json = call("GET", "/v1/models/" + std::to_string(v3)).json();
  EXPECT_NE(json::serialize(v3_json.at("metrics").at("versus_parent").at("x16")),
            json::serialize(version.at("metrics").at("versus_parent").at("x16")));

  // Every move of production is in its history, and only moves: v1 by its
  // train job; v2 and the rollback only if the gate promoted v2 (a rollback
  // onto production's own version moves nothing); v3 if promoted.
  const bool v2_promoted = status == "promoted";
  const bool v3_promoted = v3_json.at("status").as_string() == "promoted";
  const json::value history = call("GET", "/v1/aliases/production/history").json();
  const json::array& moves = history.at("history").as_array();
  ASSERT_EQ(moves.size(), 1u + (v2_promoted ? 2u : 0u) + (v3_promoted ? 1u : 0u)) << json::serialize(history);
  EXPECT_EQ(moves.front().at("to_version").as_int64(), v1);
  EXPECT_EQ(moves.back().at("to_version").as_int64(), v3_promoted ? v3 : v1);

  // The option learning_rate reaches the student's training: from the same
  // teacher, data and column, other weights than v2's at the default rate.
  ASSERT_EQ(roll_back_production_to(v1), 200);
  json::value faster =
      run_job("t4", R"({"kind": "distill", "method": "student", "epochs": 1, "column_epochs": 1, "seed": 1,
                        "learning_rate": 0.004})");
  ASSERT_EQ(faster.at("state").as_string(), "succeeded") << json::serialize(faster);
  const std::int64_t v4 = faster.at("result_version").as_int64();
  const json::value v4_json = call("GET", "/v1/models/" + std::to_string(v4)).json();
  EXPECT_EQ(v4_json.at("config").at("learning_rate").to_number<double>(), 0.004);
  EXPECT_EQ(v4_json.at("parent").as_int64(), v1);
  EXPECT_NE(sha_of(v4), sha_of(v2));
}

// The adapter distill ("method": "adapter"): an adapter for the new platform on production's
// frozen weights. The old platform's model is the parent's, bit for bit
// (scores and the gate's comparison); the new platform's has its adapter;
// the student method refuses a version that keeps adapters.
TEST_F(DistillTest, DistillsByAdapterLeavingOldPlatformsUnchanged) {
  start();
  json::value first = run_job("x16", R"({"kind": "train", "epochs": 2, "seed": 1})");
  ASSERT_EQ(first.at("state").as_string(), "succeeded") << json::serialize(first);
  const std::int64_t v1 = first.at("result_version").as_int64();
  json::value d = run_job("t4", R"({"kind": "distill", "method": "adapter", "epochs": 3, "seed": 1})");
  ASSERT_EQ(d.at("state").as_string(), "succeeded") << json::serialize(d);
  EXPECT_EQ(d.at("options").at("method").as_string(), "adapter");
  const std::int64_t v2 = d.at("result_version").as_int64();
  const json::value version = call("GET", "/v1/models/" + std::to_string(v2)).json();
  EXPECT_EQ(version.at("parent").as_int64(), v1);
  ASSERT_EQ(version.at("platforms").as_array().size(), 2u);
  EXPECT_TRUE(version.at("has_fisher").as_bool());  // the trunk's, the parent's
  const json::value& config = version.at("config");
  EXPECT_EQ(config.at("distill").at("method").as_string(), "adapter") << json::serialize(config);
  EXPECT_EQ(config.at("distill").at("adapter_rank").as_int64(), 4);
  EXPECT_EQ(config.at("distill").at("adapter_layers").as_string(), "all");
  EXPECT_GT(config.at("distill").at("adapter_parameters").as_int64(), 0);
  EXPECT_EQ(config.at("epochs").as_int64(), 3);
  EXPECT_EQ(config.at("learning_rate").to_number<double>(), 0.01);  // the adapter's default
  const json::value v1_json = call("GET", "/v1/models/" + std::to_string(v1)).json();
  EXPECT_GT(version.at("weights_size").as_int64(), v1_json.at("weights_size").as_int64());  // the adapter beside it

  // The gate measured the old platform unchanged, exactly, and says so.
  const json::value& x16 = version.at("metrics").at("versus_parent").at("x16");
  EXPECT_EQ(x16.at("change").to_number<double>(), 0.0) << json::serialize(x16);
  EXPECT_EQ(x16.at("sum_change").to_number<double>(), 0.0) << json::serialize(x16);
  const json::array& reasons = version.at("status_reasons").at("reasons").as_array();
  ASSERT_EQ(reasons.size(), 2u) << json::serialize(version);
  EXPECT_NE(std::string(reasons[0].as_string()).find(": kept"), std::string::npos) << reasons[0];
  const std::string status(version.at("status").as_string());
  EXPECT_EQ(call("GET", "/v1/aliases/production").json().at("version").as_int64(), status == "promoted" ? v2 : v1);
  // Why not, short, for tclctl lineage: a line per refusal, none when promoted.
  EXPECT_EQ(version.at("status_reasons").at("blocking").as_array().empty(), status == "promoted")
      << json::serialize(version.at("status_reasons"));
  // The lineage's figure of x16 (its standing split, the same programs for
  // every version) reads the same on both versions: its model did not change.
  const json::value& x16_v1 = v1_json.at("metrics").at("x16");
  ASSERT_TRUE(x16_v1.as_object().contains("standing_split")) << json::serialize(x16_v1);
  EXPECT_TRUE(x16_v1.at("standing_split").at("held_out").as_bool());
  EXPECT_EQ(version.at("metrics").at("x16").at("standing_split").at("top1"), x16_v1.at("standing_split").at("top1"))
      << json::serialize(version.at("metrics"));
  EXPECT_EQ(version.at("metrics").at("x16").at("standing_split").at("eval_programs"),
            x16_v1.at("standing_split").at("eval_programs"));
  EXPECT_TRUE(version.at("metrics").at("t4").at("standing_split").at("top1").is_number());

  // Served per platform: x16 by the trunk (the parent's scores, bit for
  // bit), t4 by the trunk with its adapter.
  const std::string programs = lines_of("gpu-2080ti", 97, 40);
  const json::value old_by_v1 = predict(programs, "x16", v1), old_by_v2 = predict(programs, "x16", v2);
  EXPECT_EQ(old_by_v2.at("scores"), old_by_v1.at("scores"));
  EXPECT_FALSE(old_by_v2.at("platform_adapter").as_bool());
  const json::value new_by_v1 = predict(programs, "t4", v1), new_by_v2 = predict(programs, "t4", v2);
  EXPECT_NE(new_by_v2.at("scores"), new_by_v1.at("scores"));
  EXPECT_TRUE(new_by_v2.at("platform_adapter").as_bool());
  EXPECT_FALSE(new_by_v1.at("platform_adapter").as_bool());

  // A fine-tune starts from the version's model of its platform: from v2,
  // t4's adapted model, so its weights differ from the same job's from v1
  // (the trunk; one torch thread and the same seed: the trunk would give the
  // same bytes).
  const auto column_from = [&](std::int64_t init) {
    json::value column =
        run_job("t4", R"({"kind": "train", "epochs": 1, "seed": 1, "init": ")" + std::to_string(init) + R"("})");
    EXPECT_EQ(column.at("state").as_string(), "succeeded") << json::serialize(column);
    return column.at("result_version").is_int64() ? sha_of(column.at("result_version").as_int64()) : std::string();
  };
  EXPECT_NE(column_from(v2), column_from(v1));
  // With v2 in production a student distill is refused, naming the method that works.
  ASSERT_EQ(roll_back_production_to(v2), 200);
  json::value student = run_job("t4", R"({"kind": "distill", "method": "student", "epochs": 1})");
  EXPECT_EQ(student.at("state").as_string(), "failed");
  EXPECT_NE(json::serialize(student.at("error")).find("keeps per-platform adapters or pinned models (t4)"),
            std::string::npos)
      << json::serialize(student);
  // auto_schedule reaches the adapter's fine-tune: its start's zero-shot figures are measured.
  json::value scheduled =
      run_job("t4", R"({"kind": "distill", "method": "adapter", "epochs": 1, "auto_schedule": true})");
  ASSERT_EQ(scheduled.at("state").as_string(), "succeeded") << json::serialize(scheduled);
  const json::value v_scheduled =
      call("GET", "/v1/models/" + std::to_string(scheduled.at("result_version").as_int64())).json();
  const json::value& schedule = v_scheduled.at("training_summary").at("schedule");
  ASSERT_TRUE(schedule.is_object()) << json::serialize(v_scheduled);
  EXPECT_GT(schedule.at("zero_shot_pairwise").as_double(), 0) << json::serialize(schedule);
}

// Best-of (onboarding/best_of.h), the default distill: the student becomes
// the trunk, the old platform keeps the parent's model, pinned (its scores
// bit for bit, the gate's change 0), and the new platform gets an adapter
// on the new student (the version's trunk) by default, the fine-tune with
// "choice": "fine-tune" or an adapter on the parent's trunk with "choice":
// "adapter"; the version says which and why.
TEST_F(DistillTest, BestOfPinsTheOldPlatformAndServesTheNewOneItsChoice) {
  start();
  json::value first = run_job("x16", R"({"kind": "train", "epochs": 2, "seed": 1})");
  ASSERT_EQ(first.at("state").as_string(), "succeeded") << json::serialize(first);
  const std::int64_t v1 = first.at("result_version").as_int64();
  // No method named: best-of with the adapter-on-student choice, stored as resolved.
  json::value d = run_job("t4", R"({"kind": "distill", "epochs": 1, "column_epochs": 1, "max_old_bank": 600,
                                    "unlabeled_ratio": 0, "seed": 1})");
  ASSERT_EQ(d.at("state").as_string(), "succeeded") << json::serialize(d);
  EXPECT_EQ(d.at("options").at("method").as_string(), "best-of");
  EXPECT_EQ(d.at("options").at("choice").as_string(), "adapter-on-student");
  const std::int64_t v2 = d.at("result_version").as_int64();
  const json::value version = call("GET", "/v1/models/" + std::to_string(v2)).json();
  EXPECT_EQ(version.at("config").at("distill").at("method").as_string(), "best-of") << json::serialize(version);
  EXPECT_EQ(version.at("config").at("distill").at("choice").as_string(), "adapter-on-student")
      << json::serialize(version);
  const json::value& serving = version.at("config").at("serving");
  EXPECT_EQ(serving.at("x16").at("model").as_string(), "pinned") << json::serialize(serving);
  EXPECT_EQ(serving.at("x16").at("from_version").as_int64(), v1);
  EXPECT_EQ(serving.at("t4").at("model").as_string(), "adapter");  // on the version's own trunk
  EXPECT_EQ(serving.at("t4").at("origin").as_string(), "adapter on the student");
  EXPECT_NE(std::string(serving.at("t4").at("reason").as_string()).find("choice \"adapter-on-student\""),
            std::string::npos);
  EXPECT_FALSE(serving.at("t4").as_object().contains("validation"));  // nothing scored to choose
  const json::value& x16 = version.at("metrics").at("versus_parent").at("x16");
  EXPECT_EQ(x16.at("change").to_number<double>(), 0.0) << json::serialize(x16);

  const std::string programs = lines_of("gpu-2080ti", 97, 40);
  EXPECT_EQ(predict(programs, "x16", v2).at("scores"), predict(programs, "x16", v1).at("scores"));
  EXPECT_NE(predict(programs, "t4", v2).at("scores"), predict(programs, "t4", v1).at("scores"));

  // A best-of distill of t4 from v1 with `choice`: the new platform's model is pinned whole (`origin`), the
  // version and its serving say the choice, and the old platform keeps v1's model bit for bit.
  auto best_of_from_v1 = [&](const std::string& choice, const std::string& origin) -> std::int64_t {
    EXPECT_EQ(roll_back_production_to(v1), 200);
    json::value job = run_job("t4", R"({"kind": "distill", "method": "best-of", "choice": ")" + choice +
                                        R"(", "epochs": 1, "column_epochs": 1, "max_old_bank": 600,
                                        "unlabeled_ratio": 0, "seed": 1})");
    EXPECT_EQ(job.at("state").as_string(), "succeeded") << json::serialize(job);
    const json::value* result = job.as_object().if_contains("result_version");
    if (result == nullptr || !result->is_int64()) return -1;
    EXPECT_EQ(job.at("options").at("choice").as_string(), choice);
    const std::int64_t v = result->as_int64();
    const json::value pinned_version = call("GET", "/v1/models/" + std::to_string(v)).json();
    EXPECT_EQ(pinned_version.at("config").at("distill").at("choice").as_string(), choice);
    const json::value& pinned = pinned_version.at("config").at("serving");
    EXPECT_EQ(pinned.at("t4").at("model").as_string(), "pinned") << json::serialize(pinned);
    EXPECT_EQ(pinned.at("t4").at("origin").as_string(), origin);
    EXPECT_NE(std::string(pinned.at("t4").at("reason").as_string()).find("choice \"" + choice + "\""),
              std::string::npos);
    EXPECT_EQ(pinned.at("x16").at("model").as_string(), "pinned");
    EXPECT_EQ(pinned.at("x16").at("from_version").as_int64(), v1);
    EXPECT_EQ(predict(programs, "x16", v).at("scores"), predict(programs, "x16", v1).at("scores"));
    return v;
  };
  // "choice": "fine-tune": the active column serves the new platform.
  const std::int64_t v3 = best_of_from_v1("fine-tune", "fine-tune");
  ASSERT_GT(v3, 0);
  EXPECT_NE(predict(programs, "t4", v3).at("scores"), predict(programs, "t4", v1).at("scores"));
  EXPECT_NE(predict(programs, "t4", v3).at("scores"), predict(programs, "t4", v2).at("scores"));
  // "choice": "adapter": an adapter on the parent's trunk, folded.
  const std::int64_t v4 = best_of_from_v1("adapter", "adapter on the parent's trunk");
  ASSERT_GT(v4, 0);
  for (std::int64_t other : {v1, v2, v3}) {
    EXPECT_NE(predict(programs, "t4", v4).at("scores"), predict(programs, "t4", other).at("scores")) << other;
  }
}

// Best-of with "choice": "validation": the four candidates scored on a part of
// the selection, and the best served, the version saying each one's score. (A
// test of its own: the candidates and the refit cost as much as the rest.)
TEST_F(DistillTest, BestOfByValidationServesTheBestCandidate) {
  start();
  json::value first = run_job("x16", R"({"kind": "train", "epochs": 2, "seed": 1})");
  ASSERT_EQ(first.at("state").as_string(), "succeeded") << json::serialize(first);
  json::value by_validation = run_job("t4", R"({"kind": "distill", "method": "best-of", "choice": "validation",
                                                "epochs": 1, "column_epochs": 1, "max_old_bank": 600,
                                                "unlabeled_ratio": 0, "seed": 1})");
  ASSERT_EQ(by_validation.at("state").as_string(), "succeeded") << json::serialize(by_validation);
  const json::value v3 =
      call("GET", "/v1/models/" + std::to_string(by_validation.at("result_version").as_int64())).json();
  const json::value& t4 = v3.at("config").at("serving").at("t4");
  ASSERT_EQ(t4.at("validation").as_array().size(), 4u) << json::serialize(t4);
  double best = -1, served = -2;  // the served candidate's score is the best one (a tie may go either way)
  for (const json::value& c : t4.at("validation").as_array()) {
    best = std::max(best, c.at("top1").to_number<double>());
    if (c.at("candidate") == t4.at("origin")) served = c.at("top1").to_number<double>();
  }
  EXPECT_EQ(served, best) << json::serialize(t4);
  EXPECT_NE(std::string(t4.at("reason").as_string()).find("best validation top-1"), std::string::npos);
}

TEST_F(DistillTest, DistillOptionsAreChecked) {
  start();
  // min_steps: a small set gets more epochs than asked for, and says so.
  const json::value first = run_job("x16", R"({"kind": "train", "epochs": 1, "min_steps": 12})");
  ASSERT_EQ(first.at("state").as_string(), "succeeded") << json::serialize(first);
  const std::int64_t epochs = first.at("progress").at("epochs").as_int64();
  EXPECT_GE(epochs, 2) << json::serialize(first);
  EXPECT_EQ(first.at("progress").at("epoch").as_int64(), epochs);
  const json::value v1 = call("GET", "/v1/models/" + std::to_string(first.at("result_version").as_int64())).json();
  EXPECT_GE(v1.at("training_summary").at("steps").as_int64(), 12) << json::serialize(v1);
  EXPECT_EQ(v1.at("training_summary").at("epochs_planned").as_int64(), epochs) << json::serialize(v1);
  // Early stopping: the version says which epoch it kept and its validation top-1.
  const json::value early =
      run_job("x16", R"({"kind": "train", "epochs": 4, "validation_fraction": 0.25, "patience": 1})");
  ASSERT_EQ(early.at("state").as_string(), "succeeded") << json::serialize(early);
  const json::value v2 = call("GET", "/v1/models/" + std::to_string(early.at("result_version").as_int64())).json();
  const json::value& summary = v2.at("training_summary");
  EXPECT_GE(summary.at("best_epoch").as_int64(), 1) << json::serialize(v2);
  EXPECT_LE(summary.at("best_epoch").as_int64(), summary.at("epochs_done").as_int64());
  EXPECT_LE(summary.at("epochs_done").as_int64(), std::min<std::int64_t>(4, summary.at("best_epoch").as_int64() + 1));
  EXPECT_GT(summary.at("validation_top1").as_double(), 0);
  EXPECT_EQ(v2.at("config").at("validation_fraction").as_double(), 0.25);
  EXPECT_EQ(v2.at("config").at("patience").as_int64(), 1);
  EXPECT_TRUE(v1.at("training_summary").at("validation_top1").is_null());
  // By whole tasks, then refitted on every program for the epochs chosen.
  const json::value refit = run_job(
      "x16", R"({"kind": "train", "epochs": 3, "validation_fraction": 0.4, "validation_by": "tasks", "refit": true})");
  ASSERT_EQ(refit.at("state").as_string(), "succeeded") << json::serialize(refit);
  const json::value v3 = call("GET", "/v1/models/" + std::to_string(refit.at("result_version").as_int64())).json();
  EXPECT_TRUE(v3.at("training_summary").at("refitted").as_bool()) << json::serialize(v3);
  EXPECT_EQ(v3.at("training_summary").at("epochs_done").as_int64(),
            v3.at("training_summary").at("best_epoch").as_int64());
  EXPECT_EQ(v3.at("config").at("validation_by").as_string(), "tasks");
  EXPECT_FALSE(v2.at("training_summary").at("refitted").as_bool());
  // The schedule from the data: the fine-tune says what its start scored and which schedule that chose.
  const json::value scheduled =
      run_job("x16", R"({"kind": "train", "epochs": 1, "init": "production", "auto_schedule": true})");
  ASSERT_EQ(scheduled.at("state").as_string(), "succeeded") << json::serialize(scheduled);
  const json::value v4 = call("GET", "/v1/models/" + std::to_string(scheduled.at("result_version").as_int64())).json();
  const json::value& schedule = v4.at("training_summary").at("schedule");
  ASSERT_TRUE(schedule.is_object()) << json::serialize(v4);
  const double pairwise = schedule.at("zero_shot_pairwise").as_double();
  EXPECT_GT(pairwise, 0);
  EXPECT_GT(schedule.at("zero_shot_top1").as_double(), 0);
  EXPECT_EQ(schedule.at("long").as_bool(), pairwise <= 0.5) << json::serialize(schedule);
  EXPECT_EQ(v4.at("training_summary").at("best_epoch").as_int64() > 0, pairwise <= 0.5);
  EXPECT_TRUE(v4.at("config").at("auto_schedule").as_bool());
  EXPECT_TRUE(v1.at("training_summary").at("schedule").is_null());  // not asked
  // Bad options are refused at once, naming the option (onboarding/job_options.h; every case in its unit test).
  for (const auto& [platform, options, named] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"x16", R"({"kind": "train", "auto_schedule": "yes"})", "auto_schedule"},
           {"x16", R"({"kind": "train", "validation_by": "rows"})", "validation_by"},
           {"x16", R"({"kind": "train", "validation_fraction": 0.9})", "validation_fraction"},
           {"t4", R"({"kind": "distill", "min_steps": -1})", "min_steps"},
           {"t4", R"({"kind": "distill", "method": "student", "ewc_weight": -1})", "ewc_weight"},
           {"t4", R"({"kind": "distill", "method": "adapter", "ewc_weight": 1})", "ewc_weight"},  // the student's
           {"t4", R"({"kind": "distill", "method": "student", "adapter_rank": 8})", "adapter_rank"},
           {"t4", R"({"kind": "distill", "adapter_rank": 65})", "adapter_rank"},
           {"t4", R"({"kind": "distill", "method": "lora"})", "method"},
           {"x16", R"({"kind": "train", "margin": 0.1})", "margin"}}) {
    auto refused = call("POST", "/v1/platforms/" + platform + "/jobs", options);
    EXPECT_EQ(refused.status, 400) << options << ": " << refused.body;
    EXPECT_NE(refused.body.find(named), std::string::npos) << refused.body;
  }
}

// A worker killed in the middle of a distill: no half version is visible,
// the lease runs out, another worker takes the job over and finishes it.
TEST_F(DistillTest, AKilledDistillIsRetriedAndLeavesNoHalfVersion) {
  ASSERT_NO_FATAL_FAILURE(start_without_workers_after_a_train());

  auto created = call("POST", "/v1/platforms/t4/jobs",
                      R"({"kind": "distill", "method": "adapter", "epochs": 40, "time_budget_s": 6})");
  ASSERT_EQ(created.status, 202) << created.body;
  const std::string id = std::to_string(created.json().at("id").as_int64());
  TcldProcess first(url_, {"--job-lease-ms", "2000", "--train-threads", "1"}, "worker");
  ASSERT_TRUE(first.start()) << first.log();
  json::value job;
  const auto running_by = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < running_by) {
    job = call("GET", "/v1/jobs/" + id).json();
    if (job.at("state").as_string() == "running") break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(job.at("state").as_string(), "running") << json::serialize(job);
  std::this_thread::sleep_for(1s);
  first.kill();  // SIGKILL mid-job
  EXPECT_EQ(call("GET", "/v1/models").json().at("versions").as_array().size(), 1u);

  TcldProcess second(url_, {"--job-lease-ms", "2000", "--train-threads", "1"}, "worker");
  ASSERT_TRUE(second.start()) << second.log();
  const auto done_by = std::chrono::steady_clock::now() + 240s;
  while (std::chrono::steady_clock::now() < done_by) {
    job = call("GET", "/v1/jobs/" + id).json();
    if (job.at("finished_at").is_string()) break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(job.at("state").as_string(), "succeeded") << json::serialize(job) << second.log();
  EXPECT_EQ(job.at("attempts").as_int64(), 2);
  const json::value versions = call("GET", "/v1/models").json();
  ASSERT_EQ(versions.at("versions").as_array().size(), 2u);  // v1 and the one distilled version
  EXPECT_EQ(versions.at("versions").as_array()[1].at("parent").as_int64(), 1);
  EXPECT_EQ(second.stop(), 0);
}

// A worker stopped (SIGTERM) in the middle of the default distill (best-of, in
// its active column phase): no version, the job is not failed, and after the
// lease another worker takes it over (its second attempt).
TEST_F(DistillTest, AStoppedWorkerLeavesItsBestOfDistillToBeRetried) {
  ASSERT_NO_FATAL_FAILURE(start_without_workers_after_a_train());

  auto created = call("POST", "/v1/platforms/t4/jobs", R"({"kind": "distill", "column_epochs": 1000})");
  ASSERT_EQ(created.status, 202) << created.body;
  const std::string id = std::to_string(created.json().at("id").as_int64());
  const auto wait_for = [&](const std::function<bool(const json::value&)>& done, std::chrono::seconds limit) {
    json::value job;
    for (const auto by = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < by;) {
      job = call("GET", "/v1/jobs/" + id).json();
      if (done(job)) break;
      std::this_thread::sleep_for(100ms);
    }
    return job;
  };
  const auto in_column = [](const json::value& j) {
    const json::value* phase =
        j.at("progress").is_object() ? j.at("progress").as_object().if_contains("phase") : nullptr;
    return j.at("state").as_string() == "running" && phase != nullptr && *phase == "active column";
  };
  TcldProcess first(url_, {"--job-lease-ms", "2000", "--train-threads", "1"}, "worker");
  ASSERT_TRUE(first.start()) << first.log();
  json::value job = wait_for(in_column, 90s);
  ASSERT_TRUE(in_column(job)) << json::serialize(job);
  EXPECT_EQ(first.stop(), 0);  // SIGTERM mid-phase
  job = call("GET", "/v1/jobs/" + id).json();
  EXPECT_NE(job.at("state").as_string(), "failed") << json::serialize(job) << first.log();
  EXPECT_TRUE(job.at("finished_at").is_null()) << json::serialize(job);
  EXPECT_EQ(call("GET", "/v1/models").json().at("versions").as_array().size(), 1u);

  TcldProcess second(url_, {"--job-lease-ms", "2000", "--train-threads", "1"}, "worker");
  ASSERT_TRUE(second.start()) << second.log();
  job = wait_for([](const json::value& j) { return j.at("attempts").as_int64() == 2; }, 60s);
  EXPECT_EQ(job.at("attempts").as_int64(), 2) << json::serialize(job) << second.log();
  EXPECT_EQ(call("POST", "/v1/jobs/" + id + "/cancel").status, 200);
  job = wait_for([](const json::value& j) { return j.at("finished_at").is_string(); }, 60s);
  EXPECT_EQ(job.at("state").as_string(), "cancelled") << json::serialize(job);
  EXPECT_EQ(second.stop(), 0);
}

}  // namespace
}  // namespace tcl::testing
