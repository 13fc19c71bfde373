// Issue 45's lane findings against the real tcld: a slow upload holds no
// lock other uploads need (finding 5); sample requests are refused cheaply,
// capped, and stopped when their client leaves (6); /metrics answers from
// cached gauges and readiness keeps its own lane (7); /metrics shows no
// platform or alias names unless asked (13). The database is made to block
// (a table locked by the test) where a test needs work to stand still, so
// nothing here depends on timing beyond "answered at all within seconds".
#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/record.h"
#include "core/sha256.h"
#include "tests/lib/http_client.h"
#include "tests/lib/model_fixture.h"
#include "tests/lib/raw_socket.h"
#include "tests/lib/tcld_env.h"
#include "tests/lib/tcld_process.h"

namespace tcl::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Polls `done` every 50 ms for at most `limit`; true when it came true.
bool eventually(const std::function<bool()>& done, Clock::duration limit = 20s) {
  for (const auto until = Clock::now() + limit; Clock::now() < until; std::this_thread::sleep_for(50ms)) {
    if (done()) return true;
  }
  return done();
}

// Runs a blocking call on a thread of its own: the test client cannot time
// out by itself (Beast's synchronous reads ignore deadlines), so a test asks
// whether it answered by a deadline, and the future's destructor waits for
// the end once whatever blocked it is released.
std::future<HttpResult> in_background(std::function<HttpResult()> call) {
  return std::async(std::launch::async, std::move(call));
}

// The call's answer when it came by `deadline`, else status 0.
HttpResult by(std::future<HttpResult>& f, Clock::time_point deadline) {
  if (f.wait_until(deadline) != std::future_status::ready) return HttpResult{0, "", {}, "no answer by the deadline"};
  return f.get();
}

// A transaction of the test's own that holds an ACCESS EXCLUSIVE lock on
// `table` until release() or destruction: every statement of tcld's that
// reads the table waits.
class TableLock {
 public:
  TableLock(const std::string& url, const std::string& table) : conn_(std::in_place, url) {
    tx_.emplace(*conn_);
    tx_->exec("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE");
  }
  void release() {
    tx_.reset();  // rolls back: the lock goes
    conn_.reset();
  }

 private:
  std::optional<pqxx::connection> conn_;
  std::optional<pqxx::work> tx_;
};

// How many of tcld's statements wait for a lock now.
int waiting_on_locks(const std::string& url) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  return tx
      .exec1(
          "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
          "AND wait_event_type = 'Lock'")[0]
      .as<int>();
}

std::string as_candidate(const std::string& measured_line) {
  auto r = core::parse_record(measured_line);
  if (!r) return "";
  r->costs = {0.0};
  r->error_no = 0;
  r->all_cost = 0;
  return core::write_record(*r);
}

class AbuseLanesTest : public ServingTest {
 protected:
  HttpResult get(const std::string& target, const std::string& token = "", std::chrono::milliseconds limit = 10s) {
    return http_call(tcld_->port(), HttpCall{"GET", target, "", token, {}, limit});
  }
  HttpResult post(const std::string& target, const std::string& body, std::chrono::milliseconds limit = 10s) {
    return http_call(tcld_->port(),
                     HttpCall{"POST", target, body, admin_, {{"Content-Type", "application/json"}}, limit});
  }
  // The first `n` records of lines_ as x16's candidate pool.
  void upload_pool(std::size_t n) {
    std::string pool;
    for (std::size_t i = 0; i < n && i < lines_.size(); ++i) pool += as_candidate(lines_[i]) + "\n";
    // JSON lines, not one JSON document: no application/json (the contract proxy would parse it whole).
    auto up = http_call(tcld_->port(), HttpCall{"POST", "/v1/platforms/x16/candidates", pool, admin_, {}, 60s});
    ASSERT_EQ(up.status, 201) << up.body;
  }
  std::size_t log_count(const std::string& what) const {
    const std::string log = tcld_->log();
    std::size_t n = 0;
    for (std::size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
    return n;
  }
};

// Finding 5: a slice of a slow upload reached the database, then the client
// went quiet; an upload to another platform still commits. Before, the first
// slice took the global upload lock and kept it to the slow upload's commit.
TEST_F(AbuseLanesTest, ASlowUploadDoesNotHoldUpAnotherPlatformsUpload) {
  start(2000, {"--min-request-body-rate", "1", "--read-timeout-ms", "60000"});
  ASSERT_EQ(call("POST", "/v1/platforms",
                 std::string(R"({"name": "y16", "hardware_params": [16,64,64,0,0,0,0,0], "target": ")") +
                     kServingTarget + "\"}",
                 admin_)
                .status,
            201);
  std::string first;
  for (std::size_t i = 0; i < 1500; ++i) first += lines_[i] + "\n";  // several slices
  RawSocket slow(tcld_->port());
  slow.send("POST /v1/platforms/x16/measurements HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + admin_ +
            "\r\nContent-Length: " + std::to_string(first.size() + 100000) + "\r\n\r\n" + first);
  // The upload's writer has written a slice (its last statement is past
  // begin()'s nextval) and waits for more.
  ASSERT_TRUE(eventually([&] {
    pqxx::connection c(url_);
    pqxx::nontransaction tx(c);
    return tx.exec1(
                 "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                 "AND state = 'idle in transaction' AND query NOT LIKE '%nextval%'")[0]
               .as<int>() == 1;
  })) << "the slow upload's first slice never reached the database";

  std::string small;
  for (std::size_t i = 1500; i < 1510; ++i) small += lines_[i] + "\n";
  auto pending = in_background([&] {
    return http_call(tcld_->port(), HttpCall{"POST", "/v1/platforms/y16/measurements", small, admin_, {}, 60s});
  });
  const HttpResult quick = by(pending, Clock::now() + 15s);
  slow.socket.close();  // the slow upload ends (rolled back), and whatever waited for it goes on
  EXPECT_EQ(quick.status, 201) << "the small upload waited for the slow one: " << quick.error << quick.body;
  if (pending.valid()) pending.wait();
  EXPECT_EQ(get("/v1/platforms/y16", admin_).json().at("counts").at("measurements").as_int64(), 10);
}

// Finding 7: /metrics serves cached gauges, so a scrape runs no SQL: with
// the jobs table locked (the SQL behind tcld_jobs waits), scrapes still
// answer, and readiness answers beside them. Before, each scrape ran that
// SQL on the probe lane that readiness shares: both stood still.
TEST_F(AbuseLanesTest, ScrapesRunNoSqlAndReadinessAnswersBesideThem) {
  start(10, {"--metrics-refresh-ms", "100"});
  ASSERT_TRUE(eventually([&] {
    return get("/metrics").body.find("tcld_jobs{state=\"queued\"} 0") != std::string::npos;
  })) << "the gauges were never refreshed";
  TableLock jobs(url_, "training_jobs");
  ASSERT_TRUE(eventually([&] { return waiting_on_locks(url_) >= 1; })) << "the refresher is not blocked yet";

  std::vector<std::future<HttpResult>> scrapes;
  for (int i = 0; i < 6; ++i) scrapes.push_back(in_background([&] { return get("/metrics"); }));
  auto readiness = in_background([&] { return get("/readyz"); });
  const auto deadline = Clock::now() + 15s;
  const HttpResult ready = by(readiness, deadline);
  int answered = 0;
  for (auto& f : scrapes) answered += by(f, deadline).status == 200 ? 1 : 0;
  jobs.release();  // what still waits ends now; the futures' destructors wait for it
  EXPECT_EQ(ready.status, 200) << ready.error << ready.body;
  EXPECT_EQ(answered, 6) << "scrapes waited for the database";
}

// Finding 13: /metrics is open, so platform and alias names appear there only
// with --metrics-names; by default each is a hash that tells them apart.
TEST_F(AbuseLanesTest, MetricsShowNamesOnlyWhenAsked) {
  start(200, {"--metrics-refresh-ms", "100"});
  add_version(fresh_checkpoint(1));  // alias production
  ASSERT_NO_FATAL_FAILURE(upload_pool(200));
  const std::string hashed = "platform=\"sha256:" + sha256_hex("x16").substr(0, 12) + "\"";
  const std::string production = "alias=\"sha256:" + sha256_hex("production").substr(0, 12) + "\"";
  std::string text;
  EXPECT_TRUE(eventually([&] {
    text = get("/metrics").body;
    return text.find("tcld_onboarding_candidates{" + hashed + "}") != std::string::npos &&
           text.find("tcld_model_alias_version{" + production + "}") != std::string::npos;
  })) << text;
  EXPECT_EQ(text.find("\"x16\""), std::string::npos) << text;
  EXPECT_EQ(text.find("\"production\""), std::string::npos) << text;

  start_tcld({"--metrics-names", "--metrics-refresh-ms", "100"});  // the same database
  EXPECT_TRUE(eventually([&] {
    text = get("/metrics").body;
    return text.find("tcld_onboarding_candidates{platform=\"x16\"}") != std::string::npos &&
           text.find("tcld_model_alias_version{alias=\"production\"}") != std::string::npos;
  })) << text;
}

// Finding 6: a budget the pool's task sizes refuse is answered 400 before the
// pool is read or scored (tcld logs when that long part starts).
TEST_F(AbuseLanesTest, ABudgetTheTaskSizesRefuseIsAnsweredBeforeThePoolIsRead) {
  start(600);
  ASSERT_NO_FATAL_FAILURE(upload_pool(600));
  const std::string started = "reading and scoring a pool";
  auto refused = post("/v1/platforms/x16/sample-requests", R"({"budget": 1, "strategy": "random"})");
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("budget"), std::string::npos) << refused.body;
  auto too_many = post("/v1/platforms/x16/sample-requests", R"({"budget": 100000, "strategy": "random"})");
  EXPECT_EQ(too_many.status, 400) << too_many.body;
  EXPECT_EQ(log_count(started), 0u) << "a refused request read the pool";
  auto fine = post("/v1/platforms/x16/sample-requests", R"({"fraction": 0.5, "strategy": "random"})");
  EXPECT_EQ(fine.status, 201) << fine.body;
  EXPECT_EQ(log_count(started), 1u);
}

// Finding 6: one sample request at a time (--max-sample-requests 1); the
// next is answered 503 at once, and GETs and predict still answer on the
// other worker thread. The first request stands still on a locked table.
TEST_F(AbuseLanesTest, WithTheSampleRequestCapFullGetsAndPredictAnswer) {
  start(300, {"--worker-threads", "2", "--max-sample-requests", "1"});
  add_version(fresh_checkpoint(1));
  ASSERT_NO_FATAL_FAILURE(upload_pool(300));
  const std::string predict =
      R"({"platform": "x16", "records": [)" + lines_[0] + "," + lines_[1] + "," + lines_[2] + "]}";
  ASSERT_EQ(call("POST", "/v1/predict", predict, reader_).status, 200);

  TableLock candidates(url_, "candidates");
  const std::string sample = R"({"budget": 20, "strategy": "random"})";
  auto computing = in_background([&] { return post("/v1/platforms/x16/sample-requests", sample); });
  const bool blocked = eventually([&] { return waiting_on_locks(url_) >= 1; });
  auto second = in_background([&] { return post("/v1/platforms/x16/sample-requests", sample); });
  auto reading = in_background([&] { return get("/v1/platforms/x16", reader_); });
  auto scoring = in_background([&] { return call("POST", "/v1/predict", predict, reader_); });
  const auto deadline = Clock::now() + 15s;
  HttpResult busy = by(second, deadline), platform = by(reading, deadline), scores = by(scoring, deadline);
  candidates.release();  // the first request goes on
  const HttpResult first = by(computing, Clock::now() + 30s);
  ASSERT_TRUE(blocked) << "the first sample request never reached the locked table";
  EXPECT_EQ(busy.status, 503) << busy.error << busy.body;
  EXPECT_EQ(busy.headers["Retry-After"], "1");
  EXPECT_EQ(platform.status, 200) << platform.error;
  EXPECT_EQ(scores.status, 200) << scores.error;
  EXPECT_EQ(first.status, 201) << first.body;
}

// Finding 6: a long sample request whose client leaves stops (answered 409
// to nobody) instead of computing on; the place it held is free again.
TEST_F(AbuseLanesTest, ASampleRequestStopsWhenItsClientLeaves) {
  start(3000, {"--max-sample-requests", "1"});
  add_version(fresh_checkpoint(1));
  ASSERT_NO_FATAL_FAILURE(upload_pool(3000));
  {
    const std::string body = R"({"fraction": 0.5, "mc_samples": 256})";  // rdu: every candidate scored 256 times
    RawSocket client(tcld_->port());
    client.send("POST /v1/platforms/x16/sample-requests HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + admin_ +
                "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                body);
    ASSERT_TRUE(eventually([&] { return log_count("reading and scoring a pool") == 1; }));
  }  // the client leaves
  EXPECT_TRUE(eventually([&] { return log_count("route=/v1/platforms/{name}/sample-requests status=409") == 1; }, 30s))
      << "the sample request went on after its client left";
  EXPECT_EQ(log_count("sample_request: id="), 0u);
  auto next = post("/v1/platforms/x16/sample-requests", R"({"budget": 20, "strategy": "random"})", 20s);
  EXPECT_EQ(next.status, 201) << next.body;
}

}  // namespace
}  // namespace tcl::testing
