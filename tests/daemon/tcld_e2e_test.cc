// End-to-end tests: the real tcld binary on a loopback port, over a real
// PostgreSQL cluster, spoken to through real sockets.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>

#include <cstdio>
#include <fstream>
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

const char* kPlatformBody =
    R"({"name": "x86-24c", "target": "llvm -keys=cpu -mcpu=skylake-avx512",
        "hardware_params": [24, 64, 64, 0, 0, 0, 0, 0], "description": "24-core server"})";

class TcldTest : public TcldEnvTest {
 protected:
  void start(std::vector<std::string> extra = {}) {
    ASSERT_NO_FATAL_FAILURE(start_tcld(std::move(extra)));
    admin_ = token("admin", "admin");
    writer_ = token("writer", "write");
    reader_ = token("reader", "read");
  }
  HttpResult post(const std::string& target, const std::string& body, const std::string& token) {
    return http_call(tcld_->port(), HttpCall{"POST", target, body, token, {{"Content-Type", "application/json"}}});
  }
  int port() const { return tcld_->port(); }

  std::string admin_, writer_, reader_;
};

TEST_F(TcldTest, HealthAndReadiness) {
  start();
  auto h = http_get(port(), "/healthz");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.json().at("status").as_string(), "ok");
  auto r = http_get(port(), "/readyz");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.json().at("checks").at("database").at("ok").as_bool());
  EXPECT_TRUE(r.json().at("checks").at("migrations").at("ok").as_bool());
}

TEST_F(TcldTest, ReadinessFollowsTheDatabase) {
  start();
  ASSERT_EQ(http_get(port(), "/readyz").status, 200);
  PgCluster::shared().stop();
  auto down = http_get(port(), "/readyz");
  EXPECT_EQ(down.status, 503) << down.body;
  EXPECT_EQ(down.json().at("error").at("code").as_string(), "NOT_READY");
  EXPECT_FALSE(down.json().at("error").at("details").at("checks").at("database").at("ok").as_bool());
  EXPECT_EQ(http_get(port(), "/healthz").status, 200);  // alive, just not ready
  // A data route answers 503 with a JSON error rather than hanging or crashing.
  auto during = http_get(port(), "/v1/platforms/x", reader_);
  EXPECT_EQ(during.status, 503) << during.body;

  PgCluster::shared().start();
  int status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {
    status = http_get(port(), "/readyz").status;
    if (status != 200) std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(status, 200);
  EXPECT_EQ(http_get(port(), "/v1/platforms", reader_).status, 200);
}

TEST_F(TcldTest, PlatformLifecycle) {
  start();
  auto created = post("/v1/platforms", kPlatformBody, writer_);
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.headers["Location"], "/v1/platforms/x86-24c");
  EXPECT_EQ(created.json().at("hardware_params").as_array().size(), 8u);

  auto dup = post("/v1/platforms", kPlatformBody, writer_);
  EXPECT_EQ(dup.status, 409) << dup.body;
  EXPECT_EQ(dup.json().at("error").at("code").as_string(), "ALREADY_EXISTS");

  auto one = http_get(port(), "/v1/platforms/x86-24c", reader_);
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.json().at("target").as_string(), "llvm -keys=cpu -mcpu=skylake-avx512");
  EXPECT_EQ(one.json().at("counts").at("measurements").as_int64(), 0);
  EXPECT_EQ(one.json().at("onboarding").at("state").as_string(), "registered");

  auto list = http_get(port(), "/v1/platforms", reader_);
  ASSERT_EQ(list.status, 200);
  ASSERT_EQ(list.json().at("platforms").as_array().size(), 1u);

  auto missing = http_get(port(), "/v1/platforms/nope", reader_);
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.json().at("error").at("code").as_string(), "NOT_FOUND");
}

TEST_F(TcldTest, ValidationErrorsNameTheField) {
  start();
  struct Case {
    const char* body;
    const char* field;
  } cases[] = {
      {R"({"name": "Bad Name", "target": "llvm", "hardware_params": [1,2,3,4,5,6,7,8]})", "name"},
      {R"({"target": "llvm", "hardware_params": [1,2,3,4,5,6,7,8]})", "name"},
      {R"({"name": "a", "hardware_params": [1,2,3,4,5,6,7,8]})", "target"},
      {R"({"name": "a", "target": "llvm", "hardware_params": [1,2,3]})", "hardware_params"},
      {R"({"name": "a", "target": "llvm", "hardware_params": [1,2,3,4,5,6,7,"x"]})", "hardware_params"},
      {R"({"name": "a", "target": "llvm", "hardware_params": [1,2,3,4,5,6,7,-2]})", "hardware_params"},
      {R"({"name": "a", "target": 5, "hardware_params": [1,2,3,4,5,6,7,8]})", "target"},
      {R"({"name": "a", "target": "llvm", "hardware_params": [1,2,3,4,5,6,7,8], "colour": 1})", "colour"},
  };
  for (const Case& c : cases) {
    auto r = post("/v1/platforms", c.body, writer_);
    EXPECT_EQ(r.status, 400) << c.body;
    EXPECT_EQ(r.json().at("error").at("code").as_string(), "INVALID_ARGUMENT") << r.body;
    EXPECT_EQ(r.json().at("error").at("details").at("field").as_string(), c.field) << r.body;
  }
}

TEST_F(TcldTest, MalformedJsonIs400WithPosition) {
  start();
  auto r = post("/v1/platforms", "{\"name\": \"a\",\n \"target\": }", writer_);
  ASSERT_EQ(r.status, 400) << r.body;
  const std::string msg(r.json().at("error").at("message").as_string());
  EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;
  EXPECT_EQ(post("/v1/platforms", "[1,2]", writer_).status, 400);
  EXPECT_EQ(post("/v1/platforms", "", writer_).status, 400);
  // The daemon is still fine.
  EXPECT_EQ(http_get(port(), "/healthz").status, 200);
}

TEST_F(TcldTest, TokensAndScopes) {
  start({"--token-cache-ttl-ms", "0"});
  auto none = http_get(port(), "/v1/platforms");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.headers["WWW-Authenticate"], "Bearer");
  EXPECT_EQ(none.json().at("error").at("code").as_string(), "UNAUTHENTICATED");
  EXPECT_EQ(http_get(port(), "/v1/platforms", "tcl_not_a_real_token").status, 401);

  auto weak = post("/v1/platforms", kPlatformBody, reader_);
  EXPECT_EQ(weak.status, 403) << weak.body;
  EXPECT_EQ(weak.json().at("error").at("code").as_string(), "PERMISSION_DENIED");
  EXPECT_EQ(http_get(port(), "/v1/platforms", reader_).status, 200);
  EXPECT_EQ(post("/v1/platforms", kPlatformBody, admin_).status, 201);  // admin includes write

  // Open routes need nothing.
  EXPECT_EQ(http_get(port(), "/metrics").status, 200);
  EXPECT_EQ(http_get(port(), "/v1/openapi.yaml").status, 200);

  ASSERT_EQ(run_tcld({"token", "revoke", "--name", "reader", "--database-url", url_}, nullptr), 0);
  EXPECT_EQ(http_get(port(), "/v1/platforms", reader_).status, 401);
}

TEST_F(TcldTest, UnknownRouteAndWrongMethod) {
  start();
  auto nf = http_get(port(), "/v1/nothing-here", reader_);
  EXPECT_EQ(nf.status, 404);
  EXPECT_EQ(nf.json().at("error").at("code").as_string(), "NOT_FOUND");
  auto wrong = http_call(port(), HttpCall{"DELETE", "/v1/platforms", "", admin_, {}});
  EXPECT_EQ(wrong.status, 405);
  EXPECT_NE(wrong.headers["Allow"].find("GET"), std::string::npos);
  EXPECT_NE(wrong.headers["Allow"].find("POST"), std::string::npos);
}

TEST_F(TcldTest, OversizedBodyIs413) {
  start();
  std::string big(200 * 1024, ' ');
  big[0] = '{';
  big.back() = '}';
  auto r = post("/v1/platforms", big, writer_);
  ASSERT_EQ(r.status, 413) << r.body;
  EXPECT_EQ(r.json().at("error").at("code").as_string(), "PAYLOAD_TOO_LARGE");

  // Chunked bodies have no Content-Length: the limit trips while reading.
  RawSocket s(port());
  s.send("POST /v1/platforms HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + writer_ +
         "\r\nTransfer-Encoding: chunked\r\n\r\n");
  std::string chunk(32 * 1024, 'a');
  char size_line[32];
  std::snprintf(size_line, sizeof size_line, "%zx\r\n", chunk.size());
  for (int i = 0; i < 4; ++i) {
    boost::system::error_code ec;
    boost::asio::write(s.socket, boost::asio::buffer(std::string(size_line) + chunk + "\r\n"), ec);
    if (ec) break;
  }
  const std::string answer = s.read_all();
  EXPECT_NE(answer.find("413"), std::string::npos) << answer.substr(0, 200);
  EXPECT_EQ(http_get(port(), "/healthz").status, 200);
}

TEST_F(TcldTest, KeepAliveServesManyRequestsOnOneConnection) {
  start();
  HttpConnection c(port());
  ASSERT_TRUE(c.open());
  for (int i = 0; i < 20; ++i) {
    auto r = c.send(HttpCall{"GET", "/healthz", "", "", {}});
    ASSERT_EQ(r.status, 200) << r.error;
  }
}

TEST_F(TcldTest, SlowClientTimesOutWithoutBlockingOthers) {
  start({"--read-timeout-ms", "3000", "--idle-timeout-ms", "3000"});
  RawSocket slow(port());
  slow.send("GET /healthz HTTP/1.1\r\nHost: x\r\n");  // never finishes its header
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(http_get(port(), "/healthz").status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2500ms);  // others were never queued behind it
  const std::string got = slow.read_all();                   // returns when the server closes it
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 2500ms);
  EXPECT_LT(waited, 15s);
  EXPECT_EQ(got.find("200 OK"), std::string::npos);
}

TEST_F(TcldTest, SigtermDuringARequestStillAnswersIt) {
  start();
  const std::string body = kPlatformBody;
  RawSocket s(port());
  s.send("POST /v1/platforms HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer " +
         writer_ + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body.substr(0, 10));
  std::this_thread::sleep_for(300ms);  // the header is in: the request is in flight
  ASSERT_EQ(::kill(tcld_->pid(), SIGTERM), 0);
  std::this_thread::sleep_for(300ms);
  // Draining: new connections are refused while the old request finishes.
  EXPECT_FALSE(HttpConnection(port()).open());
  s.send(body.substr(10));
  const std::string answer = s.read_all();
  EXPECT_NE(answer.find("HTTP/1.1 201"), std::string::npos) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
  EXPECT_EQ(tcld_->stop(), 0);  // exits 0 once drained
}

TEST_F(TcldTest, MetricsPassPromtool) {
  start();
  ASSERT_EQ(post("/v1/platforms", kPlatformBody, writer_).status, 201);
  ASSERT_EQ(http_get(port(), "/v1/platforms/x86-24c", reader_).status, 200);
  auto m = http_get(port(), "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_NE(m.headers["Content-Type"].find("text/plain"), std::string::npos);
  EXPECT_NE(m.body.find("tcld_http_requests_total{code=\"200\",method=\"GET\",route=\"/v1/platforms/{name}\"}"),
            std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("tcld_http_request_duration_seconds_bucket"), std::string::npos);
  EXPECT_NE(m.body.find("tcld_build_info{version="), std::string::npos);
  EXPECT_NE(m.body.find("tcld_db_pool_connections{state=\"max\"} 16"), std::string::npos);
  const std::string path = "/tmp/tcld-metrics-" + std::to_string(::getpid()) + ".txt";
  std::ofstream(path) << m.body;
  const int rc = std::system(("promtool check metrics < " + path + " >" + path + ".out 2>&1").c_str());
  std::ifstream out(path + ".out");
  std::string report((std::istreambuf_iterator<char>(out)), {});
  EXPECT_EQ(rc, 0) << report;
  std::remove(path.c_str());
  std::remove((path + ".out").c_str());
}

TEST_F(TcldTest, ServesHttpsWhenGivenACertificate) {
  const std::string dir = "/tmp/tcld-tls-" + std::to_string(::getpid());
  ASSERT_EQ(std::system(("mkdir -p " + dir +
                         " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "
                         "/CN=127.0.0.1 -keyout " +
                         dir + "/key.pem -out " + dir + "/cert.pem >/dev/null 2>&1")
                            .c_str()),
            0);
  start({"--tls-cert", dir + "/cert.pem", "--tls-key", dir + "/key.pem"});
  const std::string cmd = "curl -sk -o /dev/null -w '%{http_code}' https://127.0.0.1:" + std::to_string(port()) +
                          "/healthz > " + dir + "/code.txt";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(dir + "/code.txt");
  std::string code;
  in >> code;
  EXPECT_EQ(code, "200");
  // TLS 1.2 without forward secrecy or AEAD (finding 8 of issue 18: AES128-SHA
  // was accepted) fails the handshake; an ECDHE-GCM suite is served.
  const std::string tls12 =
      "curl -sk -o /dev/null --tls-max 1.2 https://127.0.0.1:" + std::to_string(port()) + "/healthz --ciphers ";
  EXPECT_NE(std::system((tls12 + "AES128-SHA@SECLEVEL=0").c_str()), 0);
  EXPECT_NE(std::system((tls12 + "AES256-GCM-SHA384").c_str()), 0);  // AEAD, but RSA key exchange
  EXPECT_EQ(std::system((tls12 + "ECDHE-RSA-AES128-GCM-SHA256").c_str()), 0);
  // Plain HTTP to a TLS port gets no answer, and the daemon stays up.
  EXPECT_NE(http_get(port(), "/healthz").status, 200);
  std::system(("rm -rf " + dir).c_str());
}

TEST_F(TcldTest, RefusesToStartOnAChangedMigration) {
  // Migrations are checked at start-up: simulate a shipped file that was
  // edited by changing the recorded checksum.
  start();
  ASSERT_EQ(tcld_->stop(), 0);
  const std::string cmd =
      "psql -q '" + url_ + "' -c \"UPDATE schema_migrations SET sha256 = repeat('0', 64) WHERE number = 1\" >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  TcldProcess again(url_);
  EXPECT_FALSE(again.start(10s));
  EXPECT_NE(again.log().find("0001"), std::string::npos) << again.log();
}

}  // namespace
}  // namespace tcl::testing
