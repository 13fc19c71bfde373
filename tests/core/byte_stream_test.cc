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
  LineSplitter s(max_line, [&](std::string_view t, std::uint64_t n, bool tl) { out.push_back({std::string(t), n, tl}); });
  for (std::size_t i = 0; i < input.size(); i += piece) s.feed(std::string_view(input).substr(i, piece));
  s.finish();
  return out;
}

TEST(LineSplitterTest, SameLinesWhateverTheChunking) {
  const std::string input = "first\nsecond\r\n\nlast without newline";
  const std::vector<Line> want = {{"first", 1, false}, {"second", 2, false}, {"", 3, false},
                                  {"last without newline", 4, false}};
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

}  // namespace
}  // namespace tcl::core
