// Tests of core/line_reader.h on plain and gzip files made by the test.
#include "core/line_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tcl::core {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tcl_line_reader_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

void write_plain(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f << data;
}

void write_gz(const std::string& path, const std::string& data) {
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, data.data(), static_cast<unsigned>(data.size())), static_cast<int>(data.size()));
  gzclose(gz);
}

std::vector<std::string> read_all_lines(const std::string& path, Status* status,
                                        std::size_t max_line = LineReader::kDefaultMaxLineBytes) {
  auto reader = LineReader::open(path, max_line);
  if (!reader) {
    *status = reader.status();
    return {};
  }
  std::vector<std::string> lines;
  std::string_view line;
  while ((*reader)->next(&line)) {
    lines.emplace_back(line);
    EXPECT_EQ((*reader)->line_number(), lines.size());
  }
  *status = (*reader)->status();
  return lines;
}

TEST(LineReaderTest, PlainAndGzipGiveTheSameLines) {
  const std::string long_line(1 << 20, 'x');  // longer than one read chunk
  const std::string data = "first\r\n\nthird\n" + long_line + "\nlast without newline";
  const std::vector<std::string> want = {"first", "", "third", long_line, "last without newline"};
  const std::string plain = temp_path("plain.jsonl");
  const std::string gz = temp_path("lines.jsonl.gz");
  write_plain(plain, data);
  write_gz(gz, data);
  for (const std::string& path : {plain, gz}) {
    Status s;
    EXPECT_EQ(read_all_lines(path, &s), want) << path;
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    auto all = read_file_decompressed(path);
    ASSERT_TRUE(all.is_ok());
    EXPECT_EQ(*all, data);
  }
  std::remove(plain.c_str());
  std::remove(gz.c_str());
}

TEST(LineReaderTest, ManyLinesAcrossChunkBoundaries) {
  std::string data;
  std::vector<std::string> want;
  for (int i = 0; i < 50000; ++i) {
    want.push_back("line " + std::to_string(i) + std::string(static_cast<std::size_t>(i % 97), 'y'));
    data += want.back() + "\n";
  }
  const std::string gz = temp_path("many.gz");
  write_gz(gz, data);
  Status s;
  EXPECT_EQ(read_all_lines(gz, &s), want);
  EXPECT_TRUE(s.is_ok());
  std::remove(gz.c_str());
}

TEST(LineReaderTest, Errors) {
  Status s;
  read_all_lines("/nonexistent/dir/file.jsonl.gz", &s);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);

  // A line longer than the limit.
  const std::string big = temp_path("big.jsonl");
  write_plain(big, "short\n" + std::string(3 << 20, 'z') + "\n");
  const auto lines = read_all_lines(big, &s, 1 << 20);
  EXPECT_EQ(lines, std::vector<std::string>{"short"});
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  std::remove(big.c_str());

  // A truncated gzip stream.
  std::string data;
  for (int i = 0; i < 20000; ++i) data += "record number " + std::to_string(i * 7919) + "\n";
  const std::string gz = temp_path("trunc.gz");
  write_gz(gz, data);
  std::string bytes;
  {
    std::ifstream f(gz, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  write_plain(gz, bytes.substr(0, bytes.size() / 2));
  read_all_lines(gz, &s);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.to_string();
  EXPECT_EQ(read_file_decompressed(gz).status().code(), StatusCode::kDataLoss);
  std::remove(gz.c_str());
}

}  // namespace
}  // namespace tcl::core
