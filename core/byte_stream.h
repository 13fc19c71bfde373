// core/byte_stream.h — streaming helpers for bodies that arrive in chunks:
// gzip/zlib inflation and splitting into lines, both with bounded memory.
//
// Not thread-safe; one of each per stream.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tcl::core {

// Bounds on what a compressed body may inflate to, checked as output is
// produced so that a "gzip bomb" (2 MiB of deflated newlines → 2 GiB) stops
// after about `ratio_min_bytes_out` of output, not after inflating it all.
// The defaults are far above real TVM logs: the four logs in shared/data
// inflate 16–43 times (46 at most while streaming, past 1 MiB) to 540 MB at
// most, while deflate reaches about 1000:1 on repeated bytes.
struct InflateLimits {
  // Total inflated bytes; more is kResourceExhausted.
  std::uint64_t max_bytes_out = std::uint64_t{4} << 30;
  // Inflated bytes per compressed byte consumed so far; 0 = no limit.
  double max_ratio = 200;
  // The ratio is judged only once this much has been inflated, so that a
  // small body (one record compresses 10–50 times) is never refused for it.
  std::uint64_t ratio_min_bytes_out = std::uint64_t{1} << 20;
};

// Inflates a gzip (or zlib) stream fed in pieces of any size.
class GzipInflater {
 public:
  explicit GzipInflater(InflateLimits limits = {});
  ~GzipInflater();
  GzipInflater(const GzipInflater&) = delete;
  GzipInflater& operator=(const GzipInflater&) = delete;
  // Calls `sink` with each piece of inflated output (views valid during the
  // call; at most 64 KiB each). kInvalidArgument on corrupt input;
  // kResourceExhausted, naming the limit, as soon as the output passes a
  // limit (the piece that passed it is not given to `sink`; feed no more).
  // Concatenated gzip members are accepted (as gzip(1) writes them).
  Status feed(std::string_view in, const std::function<void(std::string_view)>& sink);
  // kInvalidArgument when the input ended inside a gzip member.
  Status finish() const;
  std::uint64_t bytes_out() const { return bytes_out_; }
  std::uint64_t bytes_in() const { return bytes_in_; }  // compressed bytes consumed

 private:
  Status check_limits() const;

  void* z_;  // z_stream*, opaque so zlib.h stays out of this header
  const InflateLimits limits_;
  bool in_member_ = false;
  std::uint64_t bytes_in_ = 0;
  std::uint64_t bytes_out_ = 0;
};

// `bytes` as one gzip member (for clients that send compressed bodies).
std::string gzip_compress(std::string_view bytes, int level = 6);

// Splits a byte stream into lines ('\n', with a trailing '\r' dropped). A
// line longer than `max_line_bytes` is reported as too long (its bytes are
// skipped, not buffered) so memory stays bounded by one line.
class LineSplitter {
 public:
  // `line` is the text (valid during the call), `number` is 1-based, and
  // `too_long` says the line was cut (its text then is empty).
  using Sink = std::function<void(std::string_view line, std::uint64_t number, bool too_long)>;
  LineSplitter(std::size_t max_line_bytes, Sink sink) : max_(max_line_bytes), sink_(std::move(sink)) {}
  void feed(std::string_view bytes);
  // Emits a last line that had no '\n'.
  void finish();
  std::uint64_t lines() const { return number_; }

 private:
  void emit(std::string_view line);
  const std::size_t max_;
  Sink sink_;
  std::string partial_;    // the unfinished line
  bool skipping_ = false;  // inside a too-long line
  std::uint64_t number_ = 0;
};

}  // namespace tcl::core
