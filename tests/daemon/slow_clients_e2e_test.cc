// Slow clients hold only their own connections (issue 18, finding 1): 16
// connections trickling upload bodies and 16 downloads that are never read,
// while /healthz and /v1/predict each answer 50 times. Before the lanes, four
// such clients took every handler thread and /healthz stopped answering for
// 20-75 s. Latency is measured here, so ctest runs this test alone (SERIAL).
#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/lib/model_fixture.h"

namespace tcl::testing {
namespace {

using tcp = boost::asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A client that sends the header of a chunked upload, then one body byte
// every 100 ms (10 bytes/s) until tcld closes the connection.
void trickle_upload(int port, const std::string& token, const std::atomic<bool>& stop) {
  boost::asio::io_context ioc;
  tcp::socket s(ioc);
  boost::system::error_code ec;
  s.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)), ec);
  if (ec) return;
  const std::string head = "POST /v1/platforms/x16/measurements HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
                           "\r\nTransfer-Encoding: chunked\r\n\r\n";
  boost::asio::write(s, boost::asio::buffer(head), ec);
  const auto give_up = Clock::now() + 60s;
  while (!ec && !stop && Clock::now() < give_up) {
    boost::asio::write(s, boost::asio::buffer(std::string("1\r\n{\r\n")), ec);
    std::this_thread::sleep_for(100ms);
  }
}

// A client that asks for the platform's records and never reads them, with
// a small receive buffer so that tcld's writes soon wait on it.
void never_read_download(int port, const std::string& token, const std::atomic<bool>& stop) {
  boost::asio::io_context ioc;
  tcp::socket s(ioc);
  boost::system::error_code ec;
  s.open(tcp::v4(), ec);
  s.set_option(boost::asio::socket_base::receive_buffer_size(4096), ec);
  s.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)), ec);
  if (ec) return;
  const std::string get =
      "GET /v1/platforms/x16/measurements HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\n\r\n";
  boost::asio::write(s, boost::asio::buffer(get), ec);
  const auto give_up = Clock::now() + 60s;
  while (!stop && Clock::now() < give_up) std::this_thread::sleep_for(50ms);
}

double metric(const std::string& text, const std::string& series) {
  const std::size_t at = text.find("\n" + series + " ");  // a sample line, not its # HELP
  return at == std::string::npos ? 0.0 : std::stod(text.substr(at + series.size() + 2));
}

Clock::duration p99(std::vector<Clock::duration> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[(samples.size() * 99 + 99) / 100 - 1];  // nearest rank
}

double p99_ms(const std::vector<Clock::duration>& samples) {
  return std::chrono::duration<double, std::milli>(p99(samples)).count();
}

class SlowClientsTest : public ServingTest {};

// A route the attack does not block answers in milliseconds; a blocked one
// waits for the rate rules' grace (3 s). Under ThreadSanitizer every call is
// 5-20x slower (a /v1/predict p99 of 107 ms was seen), so the bound is wider
// there and still far below the grace.
#if defined(__SANITIZE_THREAD__)
constexpr auto kUnblocked = 1000ms;
#else
constexpr auto kUnblocked = 100ms;
#endif

TEST_F(SlowClientsTest, TricklersAndNonReadersHoldOnlyTheirOwnConnections) {
  // Rates the attackers break within seconds: 10 bytes/s in, nothing out.
  // Two tokens play all 32 attackers here: each may hold every slot (the per-client share is
  // abuse_e2e_test's; this test is about the rate rules).
  start(6000, {"--max-streams", "40", "--max-streams-per-client", "40", "--db-pool-size", "48",
               "--min-request-body-rate", "1000", "--min-response-rate", "10000000", "--min-rate-grace-ms", "3000"});
  add_version(fresh_checkpoint(1));
  std::string records;
  for (const std::string& l : lines_) records += l + "\n";  // ~6 MB: more than a socket buffers
  auto stored = call("POST", "/v1/platforms/x16/measurements", records, admin_);
  ASSERT_EQ(stored.status, 201) << stored.body;
  const auto counts_before = call("GET", "/v1/platforms/x16", "", reader_).json().at("counts");
  const std::string predict =
      R"({"platform": "x16", "records": [)" + lines_[0] + "," + lines_[1] + "," + lines_[2] + "]}";
  ASSERT_EQ(call("POST", "/v1/predict", predict, reader_).status, 200);  // the model is loaded

  std::atomic<bool> stop{false};
  std::vector<std::thread> attackers;
  struct Joiner {  // the attackers end whichever way the test leaves
    std::vector<std::thread>& threads;
    std::atomic<bool>& stop;
    ~Joiner() {
      stop = true;
      for (auto& t : threads) t.join();
    }
  } joiner{attackers, stop};
  for (int i = 0; i < 16; ++i) {
    attackers.emplace_back(trickle_upload, tcld_->port(), admin_, std::cref(stop));
    attackers.emplace_back(never_read_download, tcld_->port(), reader_, std::cref(stop));
  }
  std::this_thread::sleep_for(1500ms);  // every attacker is in; the downloads have filled their buffers
  const std::string busy = http_get(tcld_->port(), "/metrics").body;
  EXPECT_GE(metric(busy, "tcld_http_stream_slots_in_use"), 24.0) << "the attack is not running";

  std::vector<Clock::duration> health, scores;
  for (int i = 0; i < 50; ++i) {
    auto t0 = Clock::now();
    EXPECT_EQ(http_get(tcld_->port(), "/healthz").status, 200);
    health.push_back(Clock::now() - t0);
    t0 = Clock::now();
    EXPECT_EQ(call("POST", "/v1/predict", predict, reader_).status, 200);
    scores.push_back(Clock::now() - t0);
  }
  std::printf("under attack: /healthz p99 %.2f ms, /v1/predict p99 %.2f ms (50 calls each)\n", p99_ms(health),
              p99_ms(scores));
  EXPECT_LT(p99(health), kUnblocked);
  EXPECT_LT(p99(scores), kUnblocked);

  // The rate rules cut every attacker, and the counters say so.
  std::string text;
  for (auto until = Clock::now() + 30s; Clock::now() < until; std::this_thread::sleep_for(250ms)) {
    text = http_get(tcld_->port(), "/metrics").body;
    if (metric(text, "tcld_http_connections_cut_total{reason=\"min_request_body_rate\"}") >= 16 &&
        metric(text, "tcld_http_connections_cut_total{reason=\"min_response_rate\"}") >= 16 &&
        metric(text, "tcld_http_stream_slots_in_use") == 0) {  // a cut producer frees its slot just after
      break;
    }
  }
  EXPECT_EQ(metric(text, "tcld_http_connections_cut_total{reason=\"min_request_body_rate\"}"), 16.0) << text;
  EXPECT_EQ(metric(text, "tcld_http_connections_cut_total{reason=\"min_response_rate\"}"), 16.0) << text;
  EXPECT_EQ(metric(text, "tcld_http_stream_slots_in_use"), 0.0) << "a cut client still holds its slot";
  EXPECT_EQ(call("GET", "/v1/platforms/x16", "", reader_).json().at("counts"), counts_before)
      << "a trickled upload stored something";
}

}  // namespace
}  // namespace tcl::testing
