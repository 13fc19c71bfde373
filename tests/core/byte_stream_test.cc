#include "core/byte_stream.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace tcl::core {
namespace {

struct Line {
  std::string text;
  std::uint64_t number;
  bool too_long;
  bool operator==(const Line&) const = default;
};

std::vector<Line> split(const std::string& input, std::size_t piece, std::size_t max_line = 100) {
  std::vector<Line> out;
  LineSplitter s(max_line, [&](std::string_view t, std::uint64_t n, bool tl) {
    out.push_back({std::string(t), n, tl});
  });
  for (std::size_t i = 0; i < input.size(); i += piece) s.feed(std::string_view(input).substr(i, piece));
  s.finish();
  return out;
}

TEST(LineSplitterTest, SameLinesWhateverTheChunking) {
  const std::string input = "first\nsecond\r\n\nlast without newline";
  const std::vector<Line> want = {
      {"first", 1, false}, {"second", 2, false}, {"", 3, false}, {"last without newline", 4, false}};
  for (std::size_t piece : {1u, 2u, 3u, 7u, 1000u}) EXPECT_EQ(split(input, piece), want) << "piece " << piece;
}

TEST(LineSplitterTest, TooLongLinesAreReportedNotBuffered) {
  const std::string input = "ok\n" + std::string(250, 'x') + "\nafter\n" + std::string(101, 'y');
  for (std::size_t piece : {1u, 10u, 64u, 4096u}) {
    const auto got = split(input, piece);
    ASSERT_EQ(got.size(), 4u) << "piece " << piece;
    EXPECT_EQ(got[0], (Line{"ok", 1, false}));
    EXPECT_EQ(got[1], (Line{"", 2, true}));
    EXPECT_EQ(got[2], (Line{"after", 3, false}));
    EXPECT_EQ(got[3], (Line{"", 4, true}));
  }
  // Exactly at the limit is fine.
  EXPECT_EQ(split(std::string(100, 'z') + "\n", 7)[0].too_long, false);
}

TEST(GzipTest, RoundTripInAnyPieces) {
  std::mt19937 rng(7);
  std::string text;
  for (int i = 0; i < 20000; ++i) text += std::to_string(rng()) + (i % 13 == 0 ? "\n" : " ");
  const std::string gz = gzip_compress(text);
  ASSERT_LT(gz.size(), text.size());
  for (std::size_t piece : std::vector<std::size_t>{1, 5, 4096, gz.size()}) {
    GzipInflater z;
    std::string out;
    for (std::size_t i = 0; i < gz.size(); i += piece) {
      ASSERT_TRUE(z.feed(std::string_view(gz).substr(i, piece), [&](std::string_view b) { out.append(b); }).is_ok());
    }
    EXPECT_TRUE(z.finish().is_ok());
    EXPECT_EQ(out, text);
    EXPECT_EQ(z.bytes_out(), text.size());
  }
}

TEST(GzipTest, ConcatenatedMembersAndErrors) {
  const std::string two = gzip_compress("a\n") + gzip_compress("b\n");
  GzipInflater z;
  std::string out;
  ASSERT_TRUE(z.feed(two, [&](std::string_view b) { out.append(b); }).is_ok());
  EXPECT_EQ(out, "a\nb\n");

  GzipInflater bad;
  const Status s = bad.feed("definitely not gzip", [](std::string_view) {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("gzip"), std::string::npos);

  const std::string gz = gzip_compress(std::string(10000, 'q'));
  GzipInflater cut;
  ASSERT_TRUE(cut.feed(std::string_view(gz).substr(0, gz.size() / 2), [](std::string_view) {}).is_ok());
  EXPECT_EQ(cut.finish().code(), StatusCode::kInvalidArgument);
}

// Feeds `gz` in 64 KiB pieces (as a body arrives); returns the status of the
// first failing call, the bytes the sink saw in *out_bytes.
Status inflate_all(GzipInflater& z, const std::string& gz, std::uint64_t* out_bytes) {
  *out_bytes = 0;
  for (std::size_t i = 0; i < gz.size(); i += 64 << 10) {
    Status s = z.feed(std::string_view(gz).substr(i, 64 << 10), [&](std::string_view b) { *out_bytes += b.size(); });
    if (!s) return s;
  }
  return z.finish();
}

TEST(GzipTest, BombStopsOnTheRatioSoonAfterTheMinimum) {
  // 64 MiB of newlines deflate about 1000:1; the default limits stop it
  // once 1 MiB is out, having given the sink at most that much.
  const std::string bomb = gzip_compress(std::string(64 << 20, '\n'));
  ASSERT_LT(bomb.size(), 128u << 10);
  const InflateLimits limits;
  GzipInflater z(limits);
  std::uint64_t seen = 0;
  const Status s = inflate_all(z, bomb, &seen);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  EXPECT_NE(s.message().find("the limit on the inflation ratio"), std::string::npos) << s.message();
  EXPECT_LE(z.bytes_out(), limits.ratio_min_bytes_out + (64 << 10));
  EXPECT_LT(seen, z.bytes_out());  // the piece that passed the limit is withheld
}

TEST(GzipTest, SmallBodiesAreNotJudgedOnTheRatio) {
  // Just under the minimum, at the bomb's ratio: passes.
  const std::string gz = gzip_compress(std::string((1 << 20) - 1, '\n'));
  GzipInflater z;
  std::uint64_t seen = 0;
  EXPECT_TRUE(inflate_all(z, gz, &seen).is_ok());
  EXPECT_EQ(seen, (1u << 20) - 1);
}

TEST(GzipTest, InflatedBytesLimitCountsOutputNotInput) {
  std::mt19937 rng(11);
  std::string text;
  while (text.size() < 300000) text += std::to_string(rng()) + "\n";  // compresses ~2:1
  const std::string gz = gzip_compress(text);
  InflateLimits limits;
  limits.max_bytes_out = 200000;
  GzipInflater over(limits);
  std::uint64_t seen = 0;
  const Status s = inflate_all(over, gz, &seen);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  EXPECT_NE(s.message().find("more than 200000 bytes, the limit on inflated bytes"), std::string::npos) << s.message();
  EXPECT_LE(seen, 200000u);
  limits.max_bytes_out = text.size();  // exactly at the limit is fine
  GzipInflater at(limits);
  EXPECT_TRUE(inflate_all(at, gz, &seen).is_ok());
  EXPECT_EQ(seen, text.size());
  EXPECT_EQ(at.bytes_in(), gz.size());
}

}  // namespace
}  // namespace tcl::core
