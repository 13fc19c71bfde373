// Hostile and careless clients against the real tcld (issue 18): request
// framing (smuggling after a bad chunk, two Host headers, an unknown
// Transfer-Encoding), the stream lane's limit, HEAD, Content-Type, request
// ids and what a 5xx may tell a client. Raw sockets where every byte counts.
// The slow-client load test is slow_clients_e2e_test.cc (run alone).
#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "tests/lib/http_client.h"
#include "tests/lib/pg_cluster.h"
#include "tests/lib/raw_socket.h"
#include "tests/lib/tcld_env.h"
#include "tests/lib/tcld_process.h"

namespace tcl::testing {
namespace {

namespace json = boost::json;
using tcp = boost::asio::ip::tcp;
using namespace std::chrono_literals;

class HostileClientsTest : public TcldEnvTest {
 protected:
  void start(std::vector<std::string> extra = {}) {
    ASSERT_NO_FATAL_FAILURE(start_tcld(std::move(extra)));
    writer_ = token("writer", "write");
    ASSERT_EQ(
        http_call(port(),
                  HttpCall{"POST",
                           "/v1/platforms",
                           R"({"name": "fz", "target": "llvm -keys=cpu", "hardware_params": [16,64,64,0,0,0,0,0]})",
                           writer_,
                           {{"Content-Type", "application/json"}}})
            .status,
        201);
  }
  int port() const { return tcld_->port(); }

  std::string writer_;
};

// The peak resident set of process `pid` since its last reset_peak_rss(), in KiB.
long peak_rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}
void reset_peak_rss(pid_t pid) { std::ofstream("/proc/" + std::to_string(pid) + "/clear_refs") << "5"; }

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The reproduction of finding 2: the bytes after a bad chunk were run as a
// second request. Now the malformed body is the answer (400), and the
// connection closes. Without a token the header alone is refused (401,
// issue 45 finding 2): the body is never read, and what follows never runs.
TEST_F(HostileClientsTest, ABadChunkIsAnsweredOnceAndWhatFollowsIsNeverRun) {
  start();
  const std::size_t health_before = count_of(tcld_->log(), "route=/healthz");
  for (const std::string& auth : {std::string(), "Authorization: Bearer " + writer_ + "\r\n"}) {
    RawSocket s(port());
    s.send("POST /v1/platforms/fz/measurements HTTP/1.1\r\nHost: x\r\n" + auth +
           "Transfer-Encoding: chunked\r\n\r\n3\r\nabcGET /healthz?smuggled HTTP/1.1\r\nHost: x\r\nConnection: "
           "close\r\n\r\n");
    const std::string got = s.read_all();
    EXPECT_EQ(count_of(got, "HTTP/1.1 "), 1u) << got;
    if (auth.empty()) {
      EXPECT_EQ(got.rfind("HTTP/1.1 401", 0), 0u) << got;
    } else {
      EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << got;
      EXPECT_NE(got.find("malformed request body"), std::string::npos) << got;
    }
    EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  }
  EXPECT_EQ(count_of(tcld_->log(), "route=/healthz"), health_before) << "the smuggled request ran";
}

TEST_F(HostileClientsTest, TwoHostHeadersAre400AndAnUnknownTransferEncodingIs501) {
  start();
  {
    RawSocket s(port());
    s.send("GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
    const std::string got = s.read_all();
    EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << got;
    EXPECT_NE(got.find("more than one Host header"), std::string::npos) << got;
    EXPECT_EQ(count_of(got, "HTTP/1.1 "), 1u) << got;
  }
  for (const char* coding : {"gzip", "gzip, chunked", "identity"}) {
    RawSocket s(port());
    s.send(std::string("POST /v1/platforms HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ") + writer_ +
           "\r\nContent-Type: application/json\r\nTransfer-Encoding: " + coding +
           "\r\n\r\n5\r\n{}   \r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
    const std::string got = s.read_all();
    EXPECT_EQ(got.rfind("HTTP/1.1 501", 0), 0u) << coding << ": " << got;
    EXPECT_NE(got.find("Transfer-Encoding"), std::string::npos) << got;
    EXPECT_EQ(count_of(got, "HTTP/1.1 "), 1u) << got;
  }
}

// A handler that answers before the body ends still waits for its end: a
// whole, valid body keeps the connection (the early-answer path of uploads).
TEST_F(HostileClientsTest, AnEarlyAnswerToAValidBodyKeepsTheConnection) {
  start();
  RawSocket s(port());
  s.send("POST /v1/platforms/none/measurements HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + writer_ +
         "\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
  std::this_thread::sleep_for(300ms);  // the handler has answered 404 by now; the answer waits
  s.send("0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  const std::string got = s.read_all();
  EXPECT_EQ(got.rfind("HTTP/1.1 404", 0), 0u) << got;
  EXPECT_EQ(count_of(got, "HTTP/1.1 "), 2u) << got;  // the second request on the same connection
  EXPECT_NE(got.find("HTTP/1.1 200"), std::string::npos) << got;
}

TEST_F(HostileClientsTest, HeadIsServedWhereverGetIs) {
  start();
  const auto get = http_get(port(), "/v1/platforms/fz", writer_);
  ASSERT_EQ(get.status, 200);
  RawSocket s(port());
  s.send("HEAD /v1/platforms/fz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + writer_ +
         "\r\n\r\nHEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\nHEAD /v1/platforms/fz/measurements HTTP/1.1\r\nHost: "
         "x\r\nAuthorization: Bearer " +
         writer_ + "\r\nConnection: close\r\n\r\n");
  const std::string got = s.read_all();
  EXPECT_EQ(count_of(got, "HTTP/1.1 200"), 3u) << got;
  EXPECT_NE(got.find("Content-Length: " + std::to_string(get.body.size()) + "\r\n"), std::string::npos) << got;
  EXPECT_EQ(got.find("\"name\""), std::string::npos) << "a HEAD answer carried a body: " << got;
  // Where GET is not served, neither is HEAD, and 405 names what is.
  RawSocket post_only(port());
  post_only.send("HEAD /v1/jobs/1/cancel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string refused = post_only.read_all();
  EXPECT_EQ(refused.rfind("HTTP/1.1 405", 0), 0u) << refused;
  EXPECT_NE(refused.find("Allow: POST\r\n"), std::string::npos) << refused;
  auto allowed = http_call(port(), HttpCall{"DELETE", "/v1/platforms/fz", "", writer_, {}});
  EXPECT_EQ(allowed.status, 405);
  EXPECT_EQ(allowed.headers["Allow"], "GET, HEAD");
}

TEST_F(HostileClientsTest, JsonRoutesRefuseOtherContentTypes) {
  start();
  const std::string body = R"({"name": "p2", "target": "llvm -keys=cpu", "hardware_params": [16,64,64,0,0,0,0,0]})";
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"}) {
    auto r = http_call(port(), HttpCall{"POST", "/v1/platforms", body, writer_, {{"Content-Type", type}}});
    EXPECT_EQ(r.status, 415) << type << ": " << r.body;
    EXPECT_EQ(r.json().at("error").at("details").at("header").as_string(), "Content-Type");
  }
  EXPECT_EQ(http_get(port(), "/v1/platforms/p2", writer_).status, 404);  // nothing was created
  auto ok = http_call(
      port(), HttpCall{"POST", "/v1/platforms", body, writer_, {{"Content-Type", "application/json; charset=utf-8"}}});
  EXPECT_EQ(ok.status, 201) << ok.body;
}

TEST_F(HostileClientsTest, EveryAnswerCarriesARequestId) {
  start();
  auto given = http_call(port(), HttpCall{"GET", "/healthz", "", "", {{"X-Request-Id", "trace-42.a_b:c"}}});
  EXPECT_EQ(given.headers["X-Request-Id"], "trace-42.a_b:c");
  auto made = http_get(port(), "/v1/platforms/none", writer_);
  EXPECT_EQ(made.status, 404);
  ASSERT_EQ(made.headers["X-Request-Id"].size(), 16u);
  EXPECT_NE(tcld_->log().find("request_id=" + made.headers["X-Request-Id"]), std::string::npos);
  // One that could forge log lines is replaced.
  auto forged = http_call(port(), HttpCall{"GET", "/healthz", "", "", {{"X-Request-Id", "a b\"c"}}});
  EXPECT_EQ(forged.headers["X-Request-Id"].size(), 16u);
}

// Finding 6: a 503 told every client (tokens or not) the database's host,
// port and PostgreSQL's own words. Now the client reads ours, and the log
// line of the 5xx carries the cause under the request id.
TEST_F(HostileClientsTest, A5xxTellsTheClientOurWordsAndTheLogTheCause) {
  start();
  PgCluster::shared().stop();
  const std::string pg_port = std::to_string(PgCluster::shared().port());
  auto ready = http_get(port(), "/readyz");
  auto data = http_get(port(), "/v1/platforms/fz", writer_);
  auto anonymous = http_get(port(), "/v1/platforms/fz");
  PgCluster::shared().start();
  for (const HttpResult* r : {&ready, &data}) {
    EXPECT_EQ(r->status, 503) << r->body;
    EXPECT_EQ(r->headers.at("Retry-After"), "1");
    for (const std::string& leak : {pg_port, std::string("127.0.0.1"), std::string("localhost"), std::string("FATAL"),
                                    std::string("server"), std::string("postgres")}) {
      EXPECT_EQ(r->body.find(leak), std::string::npos) << "'" << leak << "' in " << r->body;
    }
    const std::string id = r->headers.at("X-Request-Id");
    const std::string log = tcld_->log();
    const std::size_t line = log.find("request_id=" + id);
    ASSERT_NE(line, std::string::npos) << log;
    const std::string logged = log.substr(line, log.find('\n', line) - line);
    EXPECT_NE(logged.find("error=\""), std::string::npos) << logged;
    EXPECT_GT(logged.size(), 40u) << "no cause in " << logged;
  }
  EXPECT_EQ(ready.json().at("error").at("details").at("checks").at("database").at("message").as_string(),
            "tcld cannot reach its database");
  // Issue 45 finding 17: the schema was blamed too while the database was down.
  EXPECT_EQ(ready.json().at("error").at("details").at("checks").at("migrations").at("message").as_string(),
            "not checked: the database is down");
  EXPECT_TRUE(anonymous.status == 401 || anonymous.status == 503) << anonymous.body;
  EXPECT_EQ(anonymous.body.find(pg_port), std::string::npos) << anonymous.body;
}

// With every stream slot taken, the next streamed request is 503 +
// Retry-After at once; other routes do not notice.
TEST_F(HostileClientsTest, AFullStreamLaneAnswers503AndOthersGoOn) {
  start({"--max-streams", "1", "--min-request-body-rate", "0"});
  RawSocket holder(port());
  holder.send("POST /v1/platforms/fz/measurements HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + writer_ +
              "\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n");
  std::this_thread::sleep_for(300ms);  // its handler holds the one slot, waiting for the body
  auto second = http_get(port(), "/v1/platforms/fz/measurements", writer_);
  EXPECT_EQ(second.status, 503) << second.body;
  EXPECT_EQ(second.headers["Retry-After"], "1");
  EXPECT_EQ(http_get(port(), "/healthz").status, 200);
  EXPECT_EQ(http_get(port(), "/v1/platforms/fz", writer_).status, 200);
  holder.send("0\r\n\r\n");  // an empty body ends the upload and frees the slot
  holder.read_all();
  EXPECT_EQ(http_get(port(), "/v1/platforms/fz/measurements", writer_).status, 200);
  const std::string metrics = http_get(port(), "/metrics").body;
  EXPECT_NE(metrics.find("tcld_http_busy_total{lane=\"stream\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("tcld_token_cache_ttl_seconds 5"), std::string::npos);
}

// Finding 8 of issue 45: a body that predict's item limit refuses was parsed
// into a DOM first (16 bytes per zero: ~190 MB here, per request). Now the
// scan refuses it before: 413 naming the field, and tcld's peak memory grows
// by about the body, not by its DOM.
TEST_F(HostileClientsTest, AnArrayPastTheItemLimitIsRefusedBeforeItIsBuilt) {
  start();
  std::string body = R"({"platform": "fz", "programs": [0)";
  body.reserve(24u << 20);
  while (body.size() < (24u << 20)) body += ",0";  // 12 million items
  body += "]}";
  const pid_t pid = tcld_->pid();
  reset_peak_rss(pid);
  const long before = peak_rss_kib(pid);
  auto r = http_call(
      port(),
      HttpCall{"POST", "/v1/predict", body, writer_, {{"Content-Type", "application/json"}}, std::chrono::seconds(60)});
  const long grown_mib = (peak_rss_kib(pid) - before) / 1024;
  EXPECT_EQ(r.status, 413) << r.body.substr(0, 300);
  EXPECT_EQ(r.json().at("error").at("details").at("field").as_string(), "programs") << r.body.substr(0, 300);
  EXPECT_NE(r.body.find("more than 65536 items"), std::string::npos) << r.body.substr(0, 300);
  ASSERT_GT(before, 0);
  EXPECT_LT(grown_mib, 120) << "the refused body's DOM was built (" << grown_mib << " MiB)";
}

// Finding 11: "\u0000" cut stored strings short (an empty target passed the
// non-empty check) and job options with it answered PostgreSQL's words. Now
// every JSON body refuses it, naming the field.
TEST_F(HostileClientsTest, NulInAnyJsonStringIsRefusedNamingTheField) {
  start();
  const std::string admin = token("ops", "admin");
  struct Case {
    std::string target, body, token, field;
  } cases[] = {
      {"/v1/platforms", R"({"name": "nul", "target": "\u0000", "hardware_params": [16,64,64,0,0,0,0,0]})", writer_,
       "target"},
      {"/v1/platforms/fz/jobs", R"({"kind": "train", "init": "x\u0000"})", writer_, "init"},
      {"/v1/platforms/fz/jobs", R"({"kind": "train", "x\u0000": 1})", writer_, "x?"},
      {"/v1/aliases/staging", R"({"version": 1, "reason": "why\u0000 cut"})", admin, "reason"},
  };
  for (const Case& c : cases) {
    auto r = http_call(port(), HttpCall{c.target == "/v1/aliases/staging" ? "PUT" : "POST",
                                        c.target,
                                        c.body,
                                        c.token,
                                        {{"Content-Type", "application/json"}}});
    EXPECT_EQ(r.status, 400) << c.body << ": " << r.body;
    EXPECT_EQ(r.json().at("error").at("details").at("field").as_string(), c.field) << r.body;
    for (const char* leak : {"Unicode", "jsonb", "PostgreSQL", "escape sequence"}) {
      EXPECT_EQ(r.body.find(leak), std::string::npos) << leak << " in " << r.body;
    }
  }
  EXPECT_EQ(http_get(port(), "/v1/platforms/nul", writer_).status, 404);  // nothing was created
}

}  // namespace
}  // namespace tcl::testing
