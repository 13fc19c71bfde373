#include "core/line_reader.h"

#include <zlib.h>

#include <cstring>

namespace tcl::core {

namespace {
constexpr std::size_t kChunk = 256 * 1024;

// Closes `gz` and says why reading `path` failed (`msg`: gzerror's text).
Status close_with_read_error(gzFile gz, const std::string& path, const char* msg) {
  std::string m = msg ? msg : "gzip error";
  gzclose(gz);
  return Status::data_loss("reading '" + path + "': " + m);
}
}  // namespace

Result<std::unique_ptr<LineReader>> LineReader::open(const std::string& path, std::size_t max_line_bytes) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) return Status::not_found("cannot open '" + path + "'");
  gzbuffer(gz, 128 * 1024);
  return std::unique_ptr<LineReader>(new LineReader(gz, path, max_line_bytes));
}

LineReader::LineReader(void* gz, std::string path, std::size_t max_line_bytes)
    : gz_(gz), path_(std::move(path)), max_line_bytes_(max_line_bytes) {
  buf_.resize(kChunk);
}

LineReader::~LineReader() { gzclose(static_cast<gzFile>(gz_)); }

bool LineReader::fill() {
  if (eof_) return false;
  // Move the unread tail to the front, grow if a line fills the buffer.
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (buf_.size() - end_ < kChunk / 2) buf_.resize(buf_.size() * 2);
  const int want = static_cast<int>(std::min<std::size_t>(buf_.size() - end_, 1u << 30));
  const int n = gzread(static_cast<gzFile>(gz_), buf_.data() + end_, static_cast<unsigned>(want));
  if (n < 0) {
    int errnum = 0;
    const char* msg = gzerror(static_cast<gzFile>(gz_), &errnum);
    status_ = Status::data_loss("reading '" + path_ + "' after line " + std::to_string(line_number_) + ": " +
                                (msg ? msg : "gzread failed"));
    eof_ = true;
    return false;
  }
  if (n == 0) {
    eof_ = true;
    int errnum = 0;
    const char* msg = gzerror(static_cast<gzFile>(gz_), &errnum);
    if (errnum != Z_OK && errnum != Z_STREAM_END) {
      status_ = Status::data_loss("reading '" + path_ + "': " + (msg ? msg : "gzip error"));
    }
    return false;
  }
  end_ += static_cast<std::size_t>(n);
  return true;
}

bool LineReader::next(std::string_view* line) {
  if (!status_.is_ok()) return false;
  std::size_t scanned = begin_;
  while (true) {
    const void* nl = std::memchr(buf_.data() + scanned, '\n', end_ - scanned);
    if (nl != nullptr) {
      const std::size_t pos = static_cast<std::size_t>(static_cast<const char*>(nl) - buf_.data());
      std::size_t len = pos - begin_;
      if (len > 0 && buf_[begin_ + len - 1] == '\r') --len;
      *line = std::string_view(buf_.data() + begin_, len);
      begin_ = pos + 1;
      ++line_number_;
      return true;
    }
    if (end_ - begin_ > max_line_bytes_) {
      status_ = Status::resource_exhausted("'" + path_ + "' line " + std::to_string(line_number_ + 1) +
                                           " is longer than " + std::to_string(max_line_bytes_) + " bytes");
      return false;
    }
    const std::size_t old_unread = end_ - begin_;
    if (!fill()) {
      if (!status_.is_ok()) return false;
      if (end_ > begin_) {  // last line without '\n'
        std::size_t len = end_ - begin_;
        if (buf_[begin_ + len - 1] == '\r') --len;
        *line = std::string_view(buf_.data() + begin_, len);
        begin_ = end_;
        ++line_number_;
        return true;
      }
      return false;
    }
    scanned = begin_ + old_unread;  // fill() moved the unread data to the front
  }
}

Result<std::string> read_file_decompressed(const std::string& path) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) return Status::not_found("cannot open '" + path + "'");
  gzbuffer(gz, 256 * 1024);
  std::string out;
  std::size_t size = 0;
  out.resize(1 << 20);
  while (true) {
    if (out.size() - size < (1 << 19)) out.resize(out.size() * 2);
    const int n =
        gzread(gz, out.data() + size, static_cast<unsigned>(std::min<std::size_t>(out.size() - size, 1u << 30)));
    if (n < 0) {
      int errnum = 0;
      return close_with_read_error(gz, path, gzerror(gz, &errnum));
    }
    if (n == 0) break;
    size += static_cast<std::size_t>(n);
  }
  int errnum = 0;
  const char* msg = gzerror(gz, &errnum);
  if (errnum != Z_OK && errnum != Z_STREAM_END) return close_with_read_error(gz, path, msg);
  gzclose(gz);
  out.resize(size);
  return out;
}

}  // namespace tcl::core
