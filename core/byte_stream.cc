#include "core/byte_stream.h"

#include <zlib.h>

#include <cstdio>
#include <stdexcept>

namespace tcl::core {

GzipInflater::GzipInflater(InflateLimits limits) : limits_(limits) {
  auto* z = new z_stream{};
  // 15 + 32: accept gzip or zlib headers, detected automatically.
  if (inflateInit2(z, 15 + 32) != Z_OK) {
    delete z;
    throw std::runtime_error("inflateInit2 failed");
  }
  z_ = z;
}

GzipInflater::~GzipInflater() {
  auto* z = static_cast<z_stream*>(z_);
  inflateEnd(z);
  delete z;
}

Status GzipInflater::feed(std::string_view in, const std::function<void(std::string_view)>& sink) {
  auto* z = static_cast<z_stream*>(z_);
  char out[64 << 10];
  z->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z->avail_in = static_cast<uInt>(in.size());
  while (z->avail_in > 0) {
    in_member_ = true;
    z->next_out = reinterpret_cast<Bytef*>(out);
    z->avail_out = sizeof out;
    const uInt avail_before = z->avail_in;
    const int rc = inflate(z, Z_NO_FLUSH);
    bytes_in_ += avail_before - z->avail_in;
    const std::size_t produced = sizeof out - z->avail_out;
    if (produced > 0) {
      bytes_out_ += produced;
      // Checked per 64 KiB of output: a bomb is stopped within one piece.
      if (Status s = check_limits(); !s) return s;
      sink(std::string_view(out, produced));
    }
    if (rc == Z_STREAM_END) {
      in_member_ = false;
      inflateReset(z);  // a following gzip member starts fresh
      continue;
    }
    if (rc == Z_BUF_ERROR && produced == 0) break;
    if (rc != Z_OK) {
      return Status::invalid_argument(std::string("gzip body is corrupt: ") + (z->msg ? z->msg : "inflate failed"));
    }
  }
  return Status::ok();
}

Status GzipInflater::check_limits() const {
  if (bytes_out_ > limits_.max_bytes_out) {
    return Status::resource_exhausted("gzip body inflates to more than " + std::to_string(limits_.max_bytes_out) +
                                      " bytes, the limit on inflated bytes");
  }
  if (limits_.max_ratio > 0 && bytes_out_ >= limits_.ratio_min_bytes_out &&
      static_cast<double>(bytes_out_) > limits_.max_ratio * static_cast<double>(bytes_in_)) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%g", limits_.max_ratio);
    return Status::resource_exhausted("gzip body inflates more than " + std::string(ratio) + " times (" +
                                      std::to_string(bytes_in_) + " bytes to " + std::to_string(bytes_out_) +
                                      "), the limit on the inflation ratio");
  }
  return Status::ok();
}

Status GzipInflater::finish() const {
  if (in_member_) return Status::invalid_argument("gzip body ended in the middle of a member (truncated)");
  return Status::ok();
}

std::string gzip_compress(std::string_view bytes, int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::string out(deflateBound(&z, static_cast<uLong>(bytes.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed");
  return out;
}

void LineSplitter::emit(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  sink_(line, ++number_, false);
}

void LineSplitter::feed(std::string_view bytes) {
  while (!bytes.empty()) {
    const std::size_t nl = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, nl);
    if (skipping_) {
      // Inside a line already reported as too long: drop bytes to its end.
    } else if (partial_.size() + piece.size() > max_) {
      skipping_ = true;
      partial_.clear();
      partial_.shrink_to_fit();
    } else if (nl != std::string_view::npos && partial_.empty()) {
      emit(piece);  // the common case: a whole line inside this chunk, no copy
    } else {
      partial_.append(piece);
      if (nl != std::string_view::npos) {
        emit(partial_);
        partial_.clear();
      }
    }
    if (nl == std::string_view::npos) return;
    if (skipping_) {
      skipping_ = false;
      sink_({}, ++number_, true);
    }
    bytes.remove_prefix(nl + 1);
  }
}

void LineSplitter::finish() {
  if (skipping_) {
    skipping_ = false;
    sink_({}, ++number_, true);
  } else if (!partial_.empty()) {
    emit(partial_);
    partial_.clear();
  }
}

}  // namespace tcl::core
