// Sample requests through the real tcld: a pool of real programs uploaded as
// candidates, requests made with each strategy, items fulfilled by later
// measurement uploads, and every documented error.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <cmath>
#include <map>
#include <set>
#include <thread>

#include "core/line_reader.h"
#include "core/record.h"
#include "registry/model_store.h"
#include "registry/pg_pool.h"
#include "tests/lib/http_client.h"
#include "tests/lib/model_fixture.h"
#include "tests/lib/model_versions.h"
#include "tests/lib/pg_cluster.h"
#include "tests/lib/tcld_env.h"
#include "tests/lib/tcld_process.h"

namespace tcl::testing {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

const std::string kData = std::string(TCL_SOURCE_DIR) + "/../shared/data";

// Every `step`-th measured record of x86-16c (spread over its tasks).
std::vector<core::Record> spread_records(std::size_t step) {
  auto reader = core::LineReader::open(kData + "/x86-16c/records.jsonl.gz");
  if (!reader) throw std::runtime_error(reader.status().message());
  std::vector<core::Record> out;
  std::string_view line;
  for (std::size_t i = 0; (*reader)->next(&line); ++i) {
    if (i % step != 0) continue;
    auto r = core::parse_record(line);
    if (r && core::classify(*r) == core::RecordClass::kMeasured) out.push_back(*r);
  }
  return out;
}

std::string as_candidate(core::Record r) {
  r.costs = {0.0};
  r.error_no = 0;
  r.all_cost = 0;
  return core::write_record(r);
}

class SampleRequestsTest : public TcldEnvTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(start_tcld());
    token_ = token("lab", "write");
    ASSERT_EQ(call("POST", "/v1/platforms",
                   R"({"name": "x16", "target": "llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu",
                       "hardware_params": [16, 64, 64, 0, 0, 0, 0, 0]})")
                  .status,
              201);
    records_ = spread_records(60);
    std::string pool;
    for (const auto& r : records_) {
      pool += as_candidate(r) + "\n";
      by_key_[r.workload_key]++;
    }
    auto up = call("POST", "/v1/platforms/x16/candidates", pool);
    ASSERT_EQ(up.status, 201) << up.body;
    pool_size_ = up.json().at("accepted").as_int64();
    ASSERT_GT(pool_size_, 200);
  }
  HttpResult call(const std::string& method, const std::string& target, const std::string& body = "",
                  std::map<std::string, std::string> headers = {}) {
    return http_call(tcld_->port(), HttpCall{method, target, body, token_, std::move(headers), 60s});
  }
  void add_model() {
    registry::PgPool pool(registry::PgPoolOptions{url_, 1});
    registry::ModelStore models(pool);
    ASSERT_NE(tcl::testing::add_version(models, fresh_checkpoint(5)), 0);
  }
  // The measured record of a sampled item (the lab's answer).
  std::string measured_line(const json::value& item) {
    auto r = core::parse_record(json::serialize(item.at("record")));
    EXPECT_TRUE(r) << r.status().to_string();
    for (const auto& m : records_) {
      if (m.workload_key == r->workload_key && m.steps == r->steps) return core::write_record(m);
    }
    ADD_FAILURE() << "no measurement for " << item.at("program_id");
    return "";
  }

  std::string token_;
  std::vector<core::Record> records_;
  std::map<std::string, int> by_key_;
  std::int64_t pool_size_ = 0;
};

// A request's picked program ids in pick order.
std::vector<std::string> picks_in_order(const json::value& request) {
  std::vector<std::string> ids;
  for (const auto& it : request.at("items").as_array()) ids.emplace_back(it.at("program_id").as_string());
  return ids;
}

std::set<std::string> ids_of(const json::value& request) {
  std::set<std::string> ids;
  for (const auto& it : request.at("items").as_array()) ids.insert(std::string(it.at("program_id").as_string()));
  return ids;
}

TEST_F(SampleRequestsTest, RandomRequestIsFulfilledByLaterUploads) {
  auto created =
      call("POST", "/v1/platforms/x16/sample-requests", R"({"fraction": 0.1, "strategy": "random", "seed": 1})");
  ASSERT_EQ(created.status, 201) << created.body;
  const json::value req = created.json();
  const auto& items = req.at("items").as_array();
  ASSERT_EQ(static_cast<std::int64_t>(items.size()), static_cast<std::int64_t>(std::ceil(0.1 * pool_size_)));
  EXPECT_EQ(ids_of(req).size(), items.size());  // no duplicates
  std::map<std::string, int> per_task;
  for (const auto& it : items) per_task[std::string(it.at("task").as_string())]++;
  for (const auto& [key, n] : by_key_) EXPECT_GE(per_task[key], std::min(2, n)) << key;
  EXPECT_TRUE(items[0].at("r").is_null());
  EXPECT_EQ(req.at("status").as_string(), "open");
  const std::string id = std::to_string(req.at("id").as_int64());

  // The records still to measure, for a lab without network to the daemon.
  auto lines = call("GET", "/v1/sample-requests/" + id, "", {{"Accept", "application/x-ndjson"}});
  ASSERT_EQ(lines.status, 200);
  EXPECT_EQ(static_cast<std::size_t>(std::count(lines.body.begin(), lines.body.end(), '\n')), items.size());

  // Half measured, then the rest: the request follows by itself.
  std::string first, rest;
  for (std::size_t i = 0; i < items.size(); ++i) (i % 2 == 0 ? first : rest) += measured_line(items[i]) + "\n";
  ASSERT_EQ(call("POST", "/v1/platforms/x16/measurements", first).status, 201);
  json::value progress = call("GET", "/v1/sample-requests/" + id).json();
  EXPECT_EQ(progress.at("items_measured").as_int64(), static_cast<std::int64_t>((items.size() + 1) / 2));
  EXPECT_EQ(progress.at("status").as_string(), "open");
  auto still = call("GET", "/v1/sample-requests/" + id, "", {{"Accept", "application/x-ndjson"}});
  EXPECT_EQ(static_cast<std::size_t>(std::count(still.body.begin(), still.body.end(), '\n')), items.size() / 2);
  ASSERT_EQ(call("POST", "/v1/platforms/x16/measurements", rest).status, 201);
  progress = call("GET", "/v1/sample-requests/" + id).json();
  EXPECT_EQ(progress.at("status").as_string(), "completed");
  EXPECT_EQ(progress.at("items_measured").as_int64(), static_cast<std::int64_t>(items.size()));
  auto too_late = call("POST", "/v1/sample-requests/" + id + "/cancel");
  EXPECT_EQ(too_late.status, 409) << too_late.body;
  EXPECT_NE(too_late.body.find("is completed"), std::string::npos) << too_late.body;

  // /metrics counts the request and its items.
  const std::string metrics = http_get(tcld_->port(), "/metrics").body;
  EXPECT_NE(metrics.find("tcld_sample_requests_total{strategy=\"random\"} 1"), std::string::npos)
      << metrics.substr(0, 3000);
  EXPECT_NE(metrics.find("tcld_sample_request_items_total{strategy=\"random\"} " + std::to_string(items.size())),
            std::string::npos);

  // The next round never picks a measured program.
  auto next = call("POST", "/v1/platforms/x16/sample-requests", R"({"budget": 40, "strategy": "random", "seed": 1})");
  ASSERT_EQ(next.status, 201) << next.body;
  for (const auto& p : ids_of(next.json())) EXPECT_EQ(ids_of(req).count(p), 0u) << p;
}

TEST_F(SampleRequestsTest, RduUsesTheModelIsDeterministicAndSkipsPendingPrograms) {
  add_model();
  auto a = call("POST", "/v1/platforms/x16/sample-requests", R"({"budget": 40, "seed": 3, "strategy": "rdu"})");
  ASSERT_EQ(a.status, 201) << a.body;
  const json::value ra = a.json();
  EXPECT_EQ(ra.at("strategy").as_string(), "rdu");
  EXPECT_EQ(ra.at("model_version").as_int64(), 1);
  EXPECT_EQ(ra.at("items").as_array().size(), 40u);
  for (const auto& it : ra.at("items").as_array()) {
    for (const char* k : {"r", "d", "u", "score"}) {
      ASSERT_TRUE(it.at(k).is_number()) << k;
      EXPECT_TRUE(std::isfinite(it.at(k).to_number<double>()));
    }
  }
  // While it is open, another request leaves its programs alone.
  auto b = call("POST", "/v1/platforms/x16/sample-requests", R"({"budget": 40, "seed": 3, "strategy": "rdu"})");
  ASSERT_EQ(b.status, 201) << b.body;
  for (const auto& p : ids_of(b.json())) EXPECT_EQ(ids_of(ra).count(p), 0u);
  // Cancelled, its programs come back: the same request picks the same items.
  for (const auto* r : {&ra}) {
    auto c = call("POST", "/v1/sample-requests/" + std::to_string(r->at("id").as_int64()) + "/cancel");
    ASSERT_EQ(c.status, 200) << c.body;
    EXPECT_EQ(c.json().at("status").as_string(), "cancelled");
  }
  ASSERT_EQ(call("POST", "/v1/sample-requests/" + std::to_string(b.json().at("id").as_int64()) + "/cancel").status,
            200);
  auto again = call("POST", "/v1/platforms/x16/sample-requests", R"({"budget": 40, "seed": 3, "strategy": "rdu"})");
  ASSERT_EQ(again.status, 201) << again.body;
  const json::value again_json = again.json();
  EXPECT_EQ(picks_in_order(ra), picks_in_order(again_json));
  // random_share 1: every pick is random's own draw (no terms), and the
  // stored parameters say so (then cancelled, to leave the pool as it was).
  auto shared = call("POST", "/v1/platforms/x16/sample-requests", R"({"budget": 36, "seed": 1, "random_share": 1})");
  ASSERT_EQ(shared.status, 201) << shared.body;
  const json::value sj = shared.json();
  EXPECT_EQ(sj.at("params").at("random_share").to_number<double>(), 1.0);
  for (const auto& it : sj.at("items").as_array()) EXPECT_TRUE(it.at("score").is_null()) << json::serialize(it);
  ASSERT_EQ(call("POST", "/v1/sample-requests/" + std::to_string(sj.at("id").as_int64()) + "/cancel").status, 200);
  EXPECT_EQ(again_json.at("params").at("random_share").to_number<double>(), 0.0);  // the default: all greedy
  // Each ablation strategy runs too.
  for (const char* s : {"r", "d", "u"}) {
    auto r = call("POST", "/v1/platforms/x16/sample-requests",
                  std::string(R"({"budget": 36, "seed": 1, "strategy": ")") + s + "\"}");
    EXPECT_EQ(r.status, 201) << s << ": " << r.body;
  }
}

// A request that names no strategy gets the default, `fast` (issue 50's
// study, docs/sampler.md): the model's predicted-fast programs spread out,
// the same picks as when it is named; before any model it is refused.
TEST_F(SampleRequestsTest, TheDefaultStrategyIsFast) {
  auto none = call("POST", "/v1/platforms/x16/sample-requests", R"({"budget": 40, "seed": 3})");
  EXPECT_EQ(none.status, 409) << none.body;
  EXPECT_NE(none.body.find("strategy 'fast' needs a model version"), std::string::npos) << none.body;
  add_model();
  auto a = call("POST", "/v1/platforms/x16/sample-requests", R"({"budget": 40, "seed": 3})");
  ASSERT_EQ(a.status, 201) << a.body;
  const json::value ra = a.json();
  EXPECT_EQ(ra.at("strategy").as_string(), "fast");
  EXPECT_EQ(ra.at("model_version").as_int64(), 1);
  EXPECT_EQ(ra.at("items").as_array().size(), 40u);
  ASSERT_EQ(call("POST", "/v1/sample-requests/" + std::to_string(ra.at("id").as_int64()) + "/cancel").status, 200);
  auto named = call("POST", "/v1/platforms/x16/sample-requests", R"({"budget": 40, "seed": 3, "strategy": "fast"})");
  ASSERT_EQ(named.status, 201) << named.body;
  EXPECT_EQ(picks_in_order(ra), picks_in_order(named.json()));
}

// A round learns from the one before: a fine-tuning job from production
// becomes the platform's active column, and the next request scores with it.
TEST_F(SampleRequestsTest, AFineTunedActiveColumnDrivesTheNextRound) {
  add_model();
  auto first = call("POST", "/v1/platforms/x16/sample-requests", R"({"fraction": 0.2, "seed": 2})");
  ASSERT_EQ(first.status, 201) << first.body;
  const json::value req = first.json();
  std::string body;
  for (const auto& it : req.at("items").as_array()) body += measured_line(it) + "\n";
  ASSERT_EQ(call("POST", "/v1/platforms/x16/measurements", body).status, 201);
  EXPECT_EQ(
      call("GET", "/v1/sample-requests/" + std::to_string(req.at("id").as_int64())).json().at("status").as_string(),
      "completed");

  auto job = call("POST", "/v1/platforms/x16/jobs",
                  R"({"kind": "train", "init": "production", "epochs": 1, "eval_fraction": 0})");
  ASSERT_EQ(job.status, 202) << job.body;
  const std::string id = std::to_string(job.json().at("id").as_int64());
  json::value state;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline) {
    state = call("GET", "/v1/jobs/" + id).json();
    const auto s = state.at("state").as_string();
    if (s == "succeeded" || s == "failed" || s == "cancelled") break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(state.at("state").as_string(), "succeeded") << json::serialize(state);
  const std::int64_t column = state.at("result_version").as_int64();
  const json::value version = call("GET", "/v1/models/" + std::to_string(column)).json();
  EXPECT_EQ(version.at("parent").as_int64(), 1);
  EXPECT_EQ(version.at("status").as_string(), "candidate");
  EXPECT_EQ(version.at("metrics").at("x16").at("eval_tasks").as_int64(), 0);  // no split: no numbers
  EXPECT_FALSE(version.at("metrics").at("x16").as_object().contains("top1"));
  EXPECT_EQ(call("GET", "/v1/aliases/active.x16").json().at("version").as_int64(), column);
  EXPECT_EQ(call("GET", "/v1/aliases/production").json().at("version").as_int64(), 1);  // unchanged

  auto next = call("POST", "/v1/platforms/x16/sample-requests", R"({"budget": 36, "seed": 2})");
  ASSERT_EQ(next.status, 201) << next.body;
  const json::value n = next.json();
  EXPECT_EQ(n.at("model_version").as_int64(), column);
  EXPECT_EQ(n.at("params").at("active_column").as_int64(), column);
  for (const auto& p : ids_of(n)) EXPECT_EQ(ids_of(req).count(p), 0u);  // never a measured program
  // A bad init fails the job with the reason.
  auto bad = call("POST", "/v1/platforms/x16/jobs", R"({"kind": "train", "init": "no-such-alias"})");
  ASSERT_EQ(bad.status, 202);
  const std::string bad_id = std::to_string(bad.json().at("id").as_int64());
  json::value failed;
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < until) {
    failed = call("GET", "/v1/jobs/" + bad_id).json();
    if (failed.at("state").as_string() == "failed") break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(failed.at("state").as_string(), "failed");
  EXPECT_NE(json::serialize(failed.at("error")).find("init"), std::string::npos) << json::serialize(failed);
}

TEST_F(SampleRequestsTest, BadParametersAreRejectedWithTheReason) {
  const auto expect = [&](const std::string& body, int status, const std::string& needle) {
    auto r = call("POST", "/v1/platforms/x16/sample-requests", body);
    EXPECT_EQ(r.status, status) << body << " -> " << r.body;
    EXPECT_NE(r.body.find(needle), std::string::npos) << body << " -> " << r.body;
  };
  expect(R"({"fraction": 0, "strategy": "random"})", 400, "(0, 1]");
  expect(R"({"fraction": 1.5, "strategy": "random"})", 400, "(0, 1]");
  expect(R"({"budget": 5, "fraction": 0.1, "strategy": "random"})", 400, "exactly one");
  expect(R"({"strategy": "random"})", 400, "exactly one");
  expect(R"({"budget": 5, "strategy": "best"})", 400, "strategy");
  expect(R"({"budget": 5, "strategy": "random", "colour": 1})", 400, "colour");
  expect(R"({"budget": 5, "weights": {"r": -1}})", 400, "weights.r");
  expect(R"({"budget": 5, "random_share": -0.1})", 400, "random_share");
  expect(R"({"budget": 5, "random_share": 1.5})", 400, "[0, 1]");
  expect(R"({"budget": 5, "random_share": "half"})", 400, "random_share");
  expect(R"({"budget": 100000, "strategy": "random"})", 400, "larger than the unmeasured pool");
  expect(R"({"budget": 3, "strategy": "random"})", 400, "budget");  // below 2 per task
  expect(R"({"budget": 40})", 409, "train one first");              // the default (fast) needs a model
  auto missing = call("POST", "/v1/platforms/nope/sample-requests", R"({"budget": 5, "strategy": "random"})");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(call("GET", "/v1/sample-requests/999").status, 404);
  EXPECT_EQ(call("GET", "/v1/sample-requests/abc").status, 404);

  // An empty pool.
  ASSERT_EQ(
      call("POST", "/v1/platforms", R"({"name": "empty", "target": "llvm", "hardware_params": [1,1,1,0,0,0,0,0]})")
          .status,
      201);
  auto empty = call("POST", "/v1/platforms/empty/sample-requests", R"({"budget": 5, "strategy": "random"})");
  EXPECT_EQ(empty.status, 400);
  EXPECT_NE(empty.body.find("no unmeasured candidates"), std::string::npos) << empty.body;

  // Cancelling twice.
  auto r = call("POST", "/v1/platforms/x16/sample-requests", R"({"budget": 40, "strategy": "random"})");
  ASSERT_EQ(r.status, 201);
  const std::string id = std::to_string(r.json().at("id").as_int64());
  EXPECT_EQ(call("POST", "/v1/sample-requests/" + id + "/cancel").status, 200);
  auto again = call("POST", "/v1/sample-requests/" + id + "/cancel");  // idempotent, as for jobs
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.json().at("status").as_string(), "cancelled");
}

}  // namespace
}  // namespace tcl::testing
