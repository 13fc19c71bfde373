// Uploads and downloads through the real tcld over a real PostgreSQL.
#include <gtest/gtest.h>

#include <signal.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <set>
#include <thread>

#include "core/byte_stream.h"
#include "registry/pg_pool.h"
#include "registry/platform_store.h"
#include "tests/lib/http_client.h"
#include "tests/lib/pg_cluster.h"
#include "tests/lib/shared_data.h"
#include "tests/lib/tcld_env.h"
#include "tests/lib/tcld_process.h"

namespace tcl::testing {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

std::string join(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

class UploadTest : public TcldEnvTest {
 protected:
  void SetUp() override { start({}); }
  void start(std::vector<std::string> extra) {
    ASSERT_NO_FATAL_FAILURE(start_tcld(std::move(extra)));
    if (token_.empty()) {
      token_ = token("w", "write");
      ASSERT_EQ(post("/v1/platforms",
                     R"({"name": "x16", "target": "llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu",
                         "hardware_params": [16, 64, 64, 0, 0, 0, 0, 0]})")
                    .status,
                201);
    }
  }
  HttpResult post(const std::string& target, const std::string& body, std::map<std::string, std::string> h = {}) {
    return http_call(tcld_->port(), HttpCall{"POST", target, body, token_, std::move(h), 60s});
  }
  HttpResult get(const std::string& target) { return http_get(tcld_->port(), target, token_); }
  json::object counts() { return get("/v1/platforms/x16").json().at("counts").as_object(); }

  std::string token_;
};

TEST_F(UploadTest, UploadThenDownloadGivesTheSameRecords) {
  const auto lines = shared_data_lines("x86-16c", 3000);
  auto r = post("/v1/platforms/x16/measurements", join(lines), {{"Content-Type", "application/x-ndjson"}});
  ASSERT_EQ(r.status, 201) << r.body;
  const json::value rep = r.json();
  EXPECT_EQ(rep.at("lines").as_int64(), 3000);
  EXPECT_EQ(rep.at("rejected_count").as_int64(), 0) << r.body;
  EXPECT_EQ(rep.at("accepted").as_int64() + rep.at("duplicates").as_int64(), 3000);
  EXPECT_GT(rep.at("upload_id").as_int64(), 0);

  auto down = get("/v1/platforms/x16/measurements");
  ASSERT_EQ(down.status, 200);
  EXPECT_EQ(down.headers["Content-Type"], "application/x-ndjson");
  EXPECT_EQ(down.headers["Transfer-Encoding"], "chunked");
  std::multiset<std::string> sent(lines.begin(), lines.end()), got;
  std::size_t start = 0;
  while (start < down.body.size()) {
    const std::size_t nl = down.body.find('\n', start);
    got.insert(down.body.substr(start, nl - start));
    start = nl + 1;
  }
  // Exact duplicates in the input are stored once; everything else comes back byte for byte.
  std::set<std::string> sent_unique(lines.begin(), lines.end());
  EXPECT_EQ(got.size(), static_cast<std::size_t>(rep.at("accepted").as_int64()));
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), sent_unique);

  const json::object c = counts();
  EXPECT_EQ(c.at("measurements").as_int64() + c.at("failed").as_int64(), rep.at("accepted").as_int64());
  EXPECT_EQ(c.at("failed").as_int64(), rep.at("failed").as_int64());
  EXPECT_GT(c.at("tasks").as_int64(), 0);
}

TEST_F(UploadTest, LongOverlappingUploadsStoreEachRecordOnce) {
  // Long enough for several of the store's slices; the second upload
  // repeats the last 4000 records of the first.
  const auto lines = shared_data_lines("x86-16c", 20000);
  const std::vector<std::string> first(lines.begin(), lines.begin() + 12000);
  const std::vector<std::string> second(lines.begin() + 8000, lines.end());
  auto a = post("/v1/platforms/x16/measurements", join(first));
  ASSERT_EQ(a.status, 201) << a.body;
  auto b = post("/v1/platforms/x16/measurements", core::gzip_compress(join(second)), {{"Content-Encoding", "gzip"}});
  ASSERT_EQ(b.status, 201) << b.body;
  const std::set<std::string> unique_first(first.begin(), first.end()), unique_all(lines.begin(), lines.end());
  EXPECT_EQ(a.json().at("accepted").as_int64(), static_cast<std::int64_t>(unique_first.size()));
  EXPECT_EQ(b.json().at("accepted").as_int64(), static_cast<std::int64_t>(unique_all.size() - unique_first.size()));
  EXPECT_EQ(b.json().at("accepted").as_int64() + b.json().at("duplicates").as_int64(), 12000);
  auto c = post("/v1/platforms/x16/measurements", join(lines));
  ASSERT_EQ(c.status, 201) << c.body;
  EXPECT_EQ(c.json().at("accepted").as_int64(), 0);
  EXPECT_EQ(c.json().at("duplicates").as_int64(), 20000);

  auto down = get("/v1/platforms/x16/measurements");
  ASSERT_EQ(down.status, 200);
  std::vector<std::string> got;
  for (std::size_t start = 0; start < down.body.size();) {
    const std::size_t nl = down.body.find('\n', start);
    got.push_back(down.body.substr(start, nl - start));
    start = nl + 1;
  }
  // Upload order, each record once.
  std::vector<std::string> expected;
  std::set<std::string> seen;
  for (const auto& l : lines) {
    if (seen.insert(l).second) expected.push_back(l);
  }
  EXPECT_EQ(got, expected);
  const json::object n = counts();
  EXPECT_EQ(n.at("measurements").as_int64() + n.at("failed").as_int64(), static_cast<std::int64_t>(expected.size()));
}

TEST_F(UploadTest, RetriesAreIdempotent) {
  const std::string body = join(shared_data_lines("x86-16c", 500));
  auto first = post("/v1/platforms/x16/measurements", body, {{"Idempotency-Key", "k-1"}});
  ASSERT_EQ(first.status, 201) << first.body;
  auto again = post("/v1/platforms/x16/measurements", body, {{"Idempotency-Key", "k-1"}});
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.headers["Idempotent-Replayed"], "true");
  EXPECT_EQ(again.json().at("upload_id"), first.json().at("upload_id"));
  // Same body, no key: recognised by its hash.
  auto by_hash = post("/v1/platforms/x16/measurements", body);
  EXPECT_EQ(by_hash.status, 200) << by_hash.body;
  EXPECT_EQ(by_hash.json().at("upload_id"), first.json().at("upload_id"));
  EXPECT_EQ(counts().at("measurements").as_int64() + counts().at("failed").as_int64(),
            first.json().at("accepted").as_int64());
  // The connection survives a replay that answered before reading the body.
  HttpConnection c(tcld_->port());
  for (int i = 0; i < 2; ++i) {
    auto r = c.send(HttpCall{"POST", "/v1/platforms/x16/measurements", body, token_, {{"Idempotency-Key", "k-1"}}});
    EXPECT_EQ(r.status, 200) << r.error;
  }
}

TEST_F(UploadTest, GzipBodiesAreAccepted) {
  const std::string body = join(shared_data_lines("x86-16c", 200));
  auto r = post("/v1/platforms/x16/measurements", core::gzip_compress(body), {{"Content-Encoding", "gzip"}});
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json().at("lines").as_int64(), 200);
  auto bad = post("/v1/platforms/x16/candidates", "this is not gzip", {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  auto unsupported = post("/v1/platforms/x16/candidates", body, {{"Content-Encoding", "br"}});
  EXPECT_EQ(unsupported.status, 415) << unsupported.body;
}

TEST_F(UploadTest, EveryBadLineGetsItsReason) {
  const std::string good = shared_data_lines("x86-16c", 1)[0];
  std::string unmeasured = good;
  // All costs 0 → an unmeasured candidate, not a measurement.
  const std::size_t r = unmeasured.find("\"r\": [[");
  ASSERT_NE(r, std::string::npos);
  const std::size_t end = unmeasured.find(']', r);
  unmeasured.replace(r, end - r, "\"r\": [[0, 0");
  std::string wrong_hw = good;
  wrong_hw.replace(wrong_hw.find("[16, 64, 64"), 11, "[99, 64, 64");
  std::string wrong_target = good;
  wrong_target.replace(wrong_target.find("llvm -keys=cpu"), 14, "cuda -keys=gpu");

  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "JSON"},
      {"not json at all", "JSON"},
      {"[1, 2, 3]", "object"},
      {R"({"r": [[1e-5], 0, 1, 1], "v": "v0.6"})", "\"i\""},
      {R"({"i": 5, "r": [[1e-5], 0, 1, 1]})", "i"},
      {R"({"i": [["k", "llvm"], [[], [["SP", 0, 1, 8]]]], "r": [[1e-5], 0, 1, 1]})", "SP step"},
      {R"({"i": [["k", "llvm"], [[], [["CA", 0]]]], "r": [[1e-5], 0, 1, 1]})", "CA step"},
      {R"({"i": [["k", "llvm"], [[], 7]], "r": [[1e-5], 0, 1, 1]})", "steps"},
      {R"({"i": [["k", "llvm"], [[], []]], "r": [[-1e-5], 0, 1, 1]})", "negative"},
      {R"({"i": [["k", "llvm"], [[], []]], "r": [["x"], 0, 1, 1]})", "cost"},
      {R"({"i": [["k", "llvm"], [[], []]], "r": [[1e-5], "zero", 1, 1]})", "error_no"},
      {R"({"i": [["k", "llvm"], [[], []]], "r": 5})", "r"},
      {R"({"i": [["k", "llvm"], [[], []]], "r": [[1e-5], 0, 1, 1], "extra": 1})", "extra"},
      {R"({"i": [["k", "llvm"], [[], []]], "r": [[1e-5], 0, 1, 1], "v": 6})", "v"},
      {R"({"i": [[5, "llvm"], [[], []]], "r": [[1e-5], 0, 1, 1]})", "workload"},
      {R"({"i": [["k", 5], [[], []]], "r": [[1e-5], 0, 1, 1]})", "target"},
      {R"({"i": [["k", "llvm", [1, 2]], [[], []]], "r": [[1e-5], 0, 1, 1]})", "hardware"},
      {R"({"i": [["k"], [[], []]], "r": [[1e-5], 0, 1, 1]})", "i[0]"},
      {R"({"i": [["k", "llvm"], [[], [["AN", 0, 1]]]], "r": [[1e-5], 0, 1, 1]})", "AN step"},
      {R"({"i": [["k", "llvm"], [[], [[5, 0]]]], "r": [[1e-5], 0, 1, 1]})", "step"},
      {R"({"i": [["k", "llvm"], [[], [["ZZ", 0]]]], "r": [[1e-5], 0, 1, 1]})", R"(i[1][1][0][0]: step kind "ZZ")"},
      {R"({"i": [["k", "llvm"], [[], [["S\u0000P", 0, 0, 8, [2], 1]]]], "r": [[1e-5], 0, 1, 1]})",
       R"(step kind "S\u0000P")"},
      {R"({"i": [["k", "llvm"], [[], [["CI", -1]]]], "r": [[1e-5], 0, 1, 1]})",
       "i[1][1][0][1]: CI stage_id must be >= 0"},
      {unmeasured, "unmeasured"},
      {wrong_hw, "num_cores"},
      {wrong_target, "target kind"},
      {std::string(2 << 20, 'x'), "longer than"},
  };
  std::string body = "# a comment line is skipped\n\n";
  for (const auto& c : cases) body += c.first + "\n";
  body += good + "\n";
  auto res = post("/v1/platforms/x16/measurements", body);
  ASSERT_EQ(res.status, 201) << res.body.substr(0, 2000);
  const json::value rep = res.json();
  EXPECT_EQ(rep.at("accepted").as_int64(), 1);
  EXPECT_EQ(rep.at("rejected_count").as_int64(), static_cast<std::int64_t>(cases.size()));
  const auto& rejected = rep.at("rejected").as_array();
  ASSERT_EQ(rejected.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(rejected[i].at("line").as_int64(), static_cast<std::int64_t>(i + 3));  // two skipped lines first
    const std::string reason(rejected[i].at("reason").as_string());
    EXPECT_NE(reason.find(cases[i].second), std::string::npos)
        << "line " << i + 3 << ": expected '" << cases[i].second << "' in: " << reason;
  }
}

TEST_F(UploadTest, CandidatesTakeUnmeasuredRecordsAndDeduplicate) {
  const auto lines = shared_data_lines("x86-16c", 300);
  auto r = post("/v1/platforms/x16/candidates", join(lines));
  ASSERT_EQ(r.status, 201) << r.body;
  auto again = post("/v1/platforms/x16/candidates", join(lines) + lines[0] + "\n");  // a different body
  ASSERT_EQ(again.status, 201) << again.body;
  EXPECT_EQ(again.json().at("accepted").as_int64(), 0);
  EXPECT_EQ(again.json().at("duplicates").as_int64(), 301);
  EXPECT_EQ(counts().at("candidates").as_int64(), r.json().at("accepted").as_int64());
  auto down = get("/v1/platforms/x16/candidates");
  ASSERT_EQ(down.status, 200);
  EXPECT_EQ(static_cast<std::int64_t>(std::count(down.body.begin(), down.body.end(), '\n')),
            r.json().at("accepted").as_int64());
}

TEST_F(UploadTest, UnknownPlatformIs404) {
  EXPECT_EQ(post("/v1/platforms/nope/measurements", "{}\n").status, 404);
  EXPECT_EQ(get("/v1/platforms/nope/measurements").status, 404);
}

// Sends a header promising `total` bytes and only the first half of them.
std::unique_ptr<boost::asio::ip::tcp::socket> send_half(boost::asio::io_context& ioc, int port,
                                                        const std::string& token, const std::string& body) {
  using boost::asio::ip::tcp;
  auto s = std::make_unique<tcp::socket>(ioc);
  s->connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  const std::string head = "POST /v1/platforms/x16/measurements HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
                           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  boost::asio::write(*s, boost::asio::buffer(head + body.substr(0, body.size() / 2)));
  return s;
}

// Bodies of 30000 lines: the first half is several of the store's slices,
// written into the tables (uncommitted) before the connection goes.
TEST_F(UploadTest, ClientDisconnectMidUploadLeavesNoRows) {
  const std::string body = join(shared_data_lines("x86-16c", 30000));
  boost::asio::io_context ioc;
  auto s = send_half(ioc, tcld_->port(), token_, body);
  std::this_thread::sleep_for(500ms);  // rows are streaming into the open transaction
  s->close();
  std::this_thread::sleep_for(500ms);
  const json::object c = counts();
  EXPECT_EQ(c.at("measurements").as_int64(), 0);
  EXPECT_EQ(c.at("failed").as_int64(), 0);
  EXPECT_EQ(c.at("programs").as_int64(), 0);
  // And a complete upload afterwards works.
  EXPECT_EQ(post("/v1/platforms/x16/measurements", body).status, 201);
}

TEST_F(UploadTest, KilledDaemonMidUploadLeavesNoRows) {
  const std::string body = join(shared_data_lines("x86-16c", 30000));
  boost::asio::io_context ioc;
  auto s = send_half(ioc, tcld_->port(), token_, body);
  std::this_thread::sleep_for(500ms);
  tcld_->kill();  // SIGKILL: no chance to clean up
  s->close();
  start({});
  const json::object c = counts();
  EXPECT_EQ(c.at("measurements").as_int64(), 0);
  EXPECT_EQ(c.at("programs").as_int64(), 0);
  EXPECT_EQ(c.at("tasks").as_int64(), 0);
}

// POSTs `body` with Transfer-Encoding: chunked (no Content-Length): one
// chunk, or only the last (empty) chunk when `body` is empty.
HttpResult post_chunked(int port, const std::string& token, const std::string& target, const std::string& body) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  boost::asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.expires_after(60s);
  stream.connect(
      boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::authorization, "Bearer " + token);
  req.set(http::field::content_type, "application/x-ndjson");
  req.body() = body;
  req.chunked(true);
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(stream, buffer, res);
  HttpResult out;
  out.status = static_cast<int>(res.result_int());
  out.body = res.body();
  return out;
}

// Finding 5 of issue 18: an empty body answered 500 with Content-Length: 0
// and 201 (0 lines) when chunked. Now one 400 for both, and for bodies of
// only blank and comment lines; nothing is stored.
void expect_empty_body_answer(const HttpResult& r, const char* how) {
  EXPECT_EQ(r.status, 400) << how << ": " << r.body;
  EXPECT_NE(r.body.find("the upload body is empty: send at least one record line"), std::string::npos)
      << how << ": " << r.body;
}

TEST_F(UploadTest, EmptyBodyIs400) {
  const json::object before = counts();
  expect_empty_body_answer(post("/v1/platforms/x16/measurements", ""), "Content-Length: 0");
  expect_empty_body_answer(post("/v1/platforms/x16/candidates", "\n\r\n# only a comment\n   \n"),
                           "blank and comment lines");
  EXPECT_EQ(counts(), before);
}

// The same answer for a chunked body and for gzip (direct to tcld in contract mode).
TEST_F(UploadTest, EmptyChunkedOrGzipBodyIs400) {
  const json::object before = counts();
  expect_empty_body_answer(post_chunked(tcld_->port(), token_, "/v1/platforms/x16/measurements", ""), "chunked");
  expect_empty_body_answer(post_chunked(tcld_->port(), token_, "/v1/platforms/x16/candidates", "\n\n"),
                           "chunked blank lines");
  expect_empty_body_answer(
      post("/v1/platforms/x16/measurements", core::gzip_compress(""), {{"Content-Encoding", "gzip"}}),
      "gzip of nothing");
  EXPECT_EQ(counts(), before);
  // A line that is not a record is not emptiness: it is rejected in a report.
  auto junk = post_chunked(tcld_->port(), token_, "/v1/platforms/x16/measurements", "junk\n");
  EXPECT_EQ(junk.status, 201) << junk.body;
}

// Finding 4 of issue 18: --max-upload-bytes counts compressed bytes, so a
// small gzip body could inflate to gigabytes. A bomb is refused on the
// inflation ratio once 1 MiB is out; a body inflating past
// --max-upload-inflated-bytes is refused too; 413 naming the limit, nothing stored.
TEST_F(UploadTest, GzipBombIs413NamingTheLimitAndStoresNothing) {
  const std::string bomb = core::gzip_compress(std::string(64 << 20, '\n'));  // ~64 KiB
  const json::object before = counts();
  auto r = post("/v1/platforms/x16/measurements", bomb, {{"Content-Encoding", "gzip"}});
  ASSERT_EQ(r.status, 413) << r.body;
  EXPECT_EQ(r.json().at("error").at("code").as_string(), "RESOURCE_EXHAUSTED");
  EXPECT_NE(r.body.find("the limit on the inflation ratio"), std::string::npos) << r.body;
  EXPECT_EQ(counts(), before);

  tcld_->stop();
  start({"--max-upload-inflated-bytes", "1000000"});
  const std::string log = join(shared_data_lines("x86-16c", 2000));
  ASSERT_GT(log.size(), 1000000u);
  auto big = post("/v1/platforms/x16/measurements", core::gzip_compress(log), {{"Content-Encoding", "gzip"}});
  ASSERT_EQ(big.status, 413) << big.body;
  EXPECT_NE(big.body.find("more than 1000000 bytes, the limit on inflated bytes"), std::string::npos) << big.body;
  EXPECT_EQ(counts(), before);
  // Under the limit the same kind of body is stored.
  auto small = post("/v1/platforms/x16/measurements", core::gzip_compress(join(shared_data_lines("x86-16c", 200))),
                    {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(small.status, 201) << small.body;
}

// Finding 6 of issue 18 (part): an Idempotency-Key holding byte 0xff reached
// PostgreSQL and came back as its encoding error. Now the handler refuses any
// key that is not 1-255 visible ASCII characters, naming the header.
TEST_F(UploadTest, BadIdempotencyKeyIs400NamingTheHeader) {
  const std::string body = join(shared_data_lines("x86-16c", 20));
  const json::object before = counts();
  // tcld's own port: a proxy in between might refuse or rewrite the byte itself.
  auto ff = http_call(
      tcld_->tcld_port(),
      HttpCall{"POST", "/v1/platforms/x16/measurements", body, token_, {{"Idempotency-Key", "key\xff"}}, 60s});
  ASSERT_EQ(ff.status, 400) << ff.body;
  EXPECT_EQ(ff.json().at("error").at("details").at("header").as_string(), "Idempotency-Key") << ff.body;
  EXPECT_NE(ff.body.find("Idempotency-Key holds byte 0xff at offset 3"), std::string::npos) << ff.body;
  for (const std::string& key : {std::string("two words"), std::string(256, 'k')}) {
    auto r = post("/v1/platforms/x16/measurements", body, {{"Idempotency-Key", key}});
    EXPECT_EQ(r.status, 400) << key << ": " << r.body;
    EXPECT_EQ(r.json().at("error").at("details").at("header").as_string(), "Idempotency-Key") << r.body;
  }
  EXPECT_EQ(counts(), before);
  EXPECT_EQ(post("/v1/platforms/x16/measurements", body, {{"Idempotency-Key", "batch-7"}}).status, 201);
}

// The counts x16 would have if recounted from its rows (PlatformStore::recount),
// in the API's JSON form.
json::object recounted(const std::string& url) {
  registry::PgPool pool(registry::PgPoolOptions{url, 1});
  registry::PlatformStore platforms(pool);
  auto platform = platforms.find("x16");
  if (!platform) throw std::runtime_error(platform.status().to_string());
  auto c = platforms.recount(platform->id);
  if (!c) throw std::runtime_error(c.status().to_string());
  return json::object{{"programs", c->programs},
                      {"tasks", c->tasks},
                      {"measurements", c->measurements},
                      {"failed", c->failed},
                      {"candidates", c->candidates}};
}

TEST_F(UploadTest, KilledDaemonMidUploadLeavesTheCountsAsTheyWere) {
  // A committed upload, then a SIGKILL in the middle of one that overlaps it
  // and adds new programs: the kept counts are the first upload's, exactly.
  const std::vector<std::string> lines = shared_data_lines("x86-16c", 30000);
  ASSERT_EQ(post("/v1/platforms/x16/measurements", join({lines.begin(), lines.begin() + 5000})).status, 201);
  const json::object before = counts();
  EXPECT_GT(before.at("programs").as_int64(), 0);
  EXPECT_EQ(before, recounted(url_));
  boost::asio::io_context ioc;
  auto s = send_half(ioc, tcld_->port(), token_, join(lines));
  std::this_thread::sleep_for(500ms);  // rows are streaming into the open transaction
  tcld_->kill();
  s->close();
  start({});
  EXPECT_EQ(counts(), before);
  EXPECT_EQ(counts(), recounted(url_));
  // The whole body now: counted like a recount.
  ASSERT_EQ(post("/v1/platforms/x16/measurements", join(lines)).status, 201);
  EXPECT_GT(counts().at("programs").as_int64(), before.at("programs").as_int64());
  EXPECT_EQ(counts(), recounted(url_));
}

TEST_F(UploadTest, OversizedUploadIs413) {
  tcld_->stop();
  start({"--max-upload-bytes", "10000"});
  auto r = post("/v1/platforms/x16/measurements", join(shared_data_lines("x86-16c", 100)));
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_EQ(r.json().at("error").at("code").as_string(), "PAYLOAD_TOO_LARGE");
  EXPECT_EQ(counts().at("measurements").as_int64(), 0);
}

}  // namespace
}  // namespace tcl::testing
