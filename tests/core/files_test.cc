// tests/core/files_test.cc — whole-file read and atomic write (core/files.h).
#include "core/files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace tcl::core {
namespace {

namespace fs = std::filesystem;

struct FilesTest : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("tcl_files_test_" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
};

TEST_F(FilesTest, WritesWholeAndReadsBack) {
  const std::string path = (dir / "a.bin").string();
  const std::string bytes("one\0two\nthree", 13);  // binary-safe
  ASSERT_TRUE(write_file_atomic(path, bytes));
  std::string back;
  ASSERT_TRUE(read_file(path, &back));
  EXPECT_EQ(back, bytes);
  ASSERT_TRUE(write_file_atomic(path, "short"));  // replaces, never appends
  ASSERT_TRUE(read_file(path, &back));
  EXPECT_EQ(back, "short");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST_F(FilesTest, AFailedWriteKeepsTheOldFile) {
  const std::string path = (dir / "kept").string();
  ASSERT_TRUE(write_file_atomic(path, "old"));
  fs::create_directory(path + ".tmp");  // the temporary cannot be opened as a file
  EXPECT_FALSE(write_file_atomic(path, "new"));
  std::string back;
  ASSERT_TRUE(read_file(path, &back));
  EXPECT_EQ(back, "old");
}

TEST_F(FilesTest, MissingPathsAreFalse) {
  std::string out = "untouched";
  EXPECT_FALSE(read_file((dir / "none").string(), &out));
  EXPECT_EQ(out, "untouched");
  EXPECT_FALSE(write_file_atomic((dir / "no" / "such" / "dir").string(), "x"));
}

}  // namespace
}  // namespace tcl::core
