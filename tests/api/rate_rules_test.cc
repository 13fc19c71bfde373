// api/rate_rules.h: the slow-client rules as arithmetic. Issue 45 finding 18:
// the documented 240 B/s answer floor was ~20-60 KB/s in practice, because
// one write (a whole answer) had write_timeout to finish whatever its size.
#include "api/rate_rules.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tcl::api {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A reader taking `rate` bytes/s of an answer of `total` bytes written in
// pieces of `piece` bytes; true when no write outlives its deadline.
bool steady_reader_finishes(const RateRule& rule, std::size_t rate, std::uint64_t total, std::size_t piece) {
  Clock::time_point now{};
  std::uint64_t sent = 0;
  Clock::duration active{};
  while (sent < total) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(piece, total - sent));
    const RateDeadline d = write_deadline(rule, now, sent, active, n);
    const auto took = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(double(n) / rate));
    if (now + took > d.at) return false;
    now += took;
    active += took;
    sent += n;
  }
  return true;
}

TEST(RateRulesTest, ASteadyReaderAboveTheFloorIsNeverCut) {
  const RateRule rule{240, 5s, 30s};
  for (std::size_t rate : {300, 2000, 5000, 20000}) {
    EXPECT_TRUE(steady_reader_finishes(rule, rate, 10 << 20, 64 << 10)) << rate << " B/s";
  }
  EXPECT_FALSE(steady_reader_finishes(rule, 200, 10 << 20, 64 << 10)) << "200 B/s is under the floor";
}

TEST(RateRulesTest, AStalledReaderIsCutWithinOnePiecesAllowance) {
  const RateRule rule{240, 5s, 30s};
  const Clock::time_point now{};
  // 4 MiB went into socket buffers in a tenth of a second; then the reader stops.
  const RateDeadline d = write_deadline(rule, now, 4 << 20, 100ms, 64 << 10);
  EXPECT_GE(d.at - now, 30s);
  EXPECT_LE(d.at - now, 274s);  // 64 KiB at 240 B/s, not the hours the average alone would allow
}

TEST(RateRulesTest, WithoutARateOnlyTheTimeoutCounts) {
  const RateRule rule{0, 5s, 30s};
  const Clock::time_point now{};
  EXPECT_EQ(write_deadline(rule, now, 0, {}, 64 << 10).at, now + 30s);
  EXPECT_EQ(read_deadline(rule, now, now, 0).at, now + 30s);
}

TEST(RateRulesTest, ABodyMustAverageTheFloorAfterTheGrace) {
  const RateRule rule{240, 5s, 30s};
  const Clock::time_point start{};
  // Nothing sent: cut when the grace ends.
  RateDeadline d = read_deadline(rule, start + 1s, start, 0);
  EXPECT_EQ(d.at, start + 5s);
  EXPECT_STREQ(d.reason, "min_request_body_rate");
  // 24,000 bytes in: allowed until they would be 240 B/s (100 s), capped by one wait's timeout.
  d = read_deadline(rule, start + 10s, start, 24000);
  EXPECT_EQ(d.at, start + 40s);
  EXPECT_STREQ(d.reason, "read_timeout");
  d = read_deadline(rule, start + 90s, start, 24000);
  EXPECT_EQ(d.at, start + 100s);
  EXPECT_STREQ(d.reason, "min_request_body_rate");
}

}  // namespace
}  // namespace tcl::api
