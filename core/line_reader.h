// core/line_reader.h — reads a .jsonl or .jsonl.gz file line by line (zlib's
// gzread reads plain files transparently) with bounded memory: one read
// buffer plus the longest line seen, capped at max_line_bytes.
//
// Not thread-safe; one reader per thread. Owns its file handle.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tcl::core {

class LineReader {
 public:
  static constexpr std::size_t kDefaultMaxLineBytes = 64u << 20;

  // kNotFound when the file cannot be opened.
  static Result<std::unique_ptr<LineReader>> open(const std::string& path,
                                                  std::size_t max_line_bytes = kDefaultMaxLineBytes);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Sets *line to the next line without its '\n' (and '\r'); the view stays
  // valid until the next call. Returns false at the end of the file or on an
  // error: then status() tells which (OK = clean end; kDataLoss = corrupt or
  // truncated gzip; kResourceExhausted = a line longer than max_line_bytes).
  bool next(std::string_view* line);
  const Status& status() const { return status_; }
  // 1-based number of the line last returned.
  std::uint64_t line_number() const { return line_number_; }

 private:
  LineReader(void* gz, std::string path, std::size_t max_line_bytes);
  bool fill();  // reads more into buf_; false at EOF or error

  void* gz_;  // gzFile, opaque so zlib.h stays out of this header
  std::string path_;
  std::size_t max_line_bytes_;
  std::string buf_;
  std::size_t begin_ = 0;  // unread data is buf_[begin_, end_)
  std::size_t end_ = 0;
  bool eof_ = false;
  std::uint64_t line_number_ = 0;
  Status status_;
};

// The whole file, decompressed when gzip, into memory (for benchmarks/tools).
Result<std::string> read_file_decompressed(const std::string& path);

}  // namespace tcl::core
