#include "registry/copy_codec.h"

#include <cstring>

namespace tcl::registry::internal {
namespace {

constexpr std::uint32_t kFloat8Oid = 701;

std::uint64_t get_be(std::string_view b) {
  std::uint64_t v = 0;
  for (char c : b) v = (v << 8) | static_cast<unsigned char>(c);
  return v;
}

}  // namespace

void put_be16(std::string& out, std::uint16_t v) {
  const char b[2] = {static_cast<char>(v >> 8), static_cast<char>(v & 0xff)};
  out.append(b, 2);
}
void put_be32(std::string& out, std::uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>((v >> 16) & 0xff),
                     static_cast<char>((v >> 8) & 0xff), static_cast<char>(v & 0xff)};
  out.append(b, 4);
}
void put_be64(std::string& out, std::uint64_t v) {
  char b[8];
  for (int i = 7; i >= 0; --i, v >>= 8) b[i] = static_cast<char>(v & 0xff);
  out.append(b, 8);
}
std::uint64_t double_bits(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}
void field_bytes(std::string& out, std::string_view bytes) {
  put_be32(out, static_cast<std::uint32_t>(bytes.size()));
  out.append(bytes);
}
void field_int4(std::string& out, std::int32_t v) {
  put_be32(out, 4);
  put_be32(out, static_cast<std::uint32_t>(v));
}
void field_int8(std::string& out, std::int64_t v) {
  put_be32(out, 8);
  put_be64(out, static_cast<std::uint64_t>(v));
}
void field_float8(std::string& out, double v) {
  put_be32(out, 8);
  put_be64(out, double_bits(v));
}
// ndim, has-nulls flag, element type (float8), then per dimension its length
// and lower bound (1), then the elements as fields. Empty: ndim 0, no more.
void field_float8_array(std::string& out, std::span<const double> values) {
  if (values.empty()) {
    put_be32(out, 12);
    put_be32(out, 0);
    put_be32(out, 0);
    put_be32(out, kFloat8Oid);
    return;
  }
  put_be32(out, static_cast<std::uint32_t>(20 + 12 * values.size()));
  put_be32(out, 1);
  put_be32(out, 0);
  put_be32(out, kFloat8Oid);
  put_be32(out, static_cast<std::uint32_t>(values.size()));
  put_be32(out, 1);
  for (double v : values) field_float8(out, v);
}

std::optional<std::uint16_t> CopyReader::tuple() {
  if (rest_.size() < 2) return std::nullopt;
  const auto n = static_cast<std::uint16_t>(get_be(rest_.substr(0, 2)));
  rest_.remove_prefix(2);
  return n;
}

std::optional<std::string_view> CopyReader::field() {
  if (rest_.size() < 4) return std::nullopt;
  const std::uint64_t n = get_be(rest_.substr(0, 4));
  if (n > rest_.size() - 4) return std::nullopt;  // also NULL (-1)
  const std::string_view value = rest_.substr(4, n);
  rest_.remove_prefix(4 + n);
  return value;
}

std::optional<std::string_view> CopyReader::bytes() { return field(); }

std::optional<std::int32_t> CopyReader::int4() {
  CopyReader r = *this;
  auto f = r.field();
  if (!f || f->size() != 4) return std::nullopt;
  *this = r;
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(get_be(*f)));
}

std::optional<std::int64_t> CopyReader::int8() {
  CopyReader r = *this;
  auto f = r.field();
  if (!f || f->size() != 8) return std::nullopt;
  *this = r;
  return static_cast<std::int64_t>(get_be(*f));
}

std::optional<double> CopyReader::float8() {
  CopyReader r = *this;
  auto f = r.field();
  if (!f || f->size() != 8) return std::nullopt;
  *this = r;
  const std::uint64_t bits = get_be(*f);
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

std::optional<std::vector<double>> CopyReader::float8_array() {
  CopyReader outer = *this;
  auto f = outer.field();
  if (!f || f->size() < 12) return std::nullopt;
  const std::uint64_t ndim = get_be(f->substr(0, 4));
  if (get_be(f->substr(4, 4)) != 0 || get_be(f->substr(8, 4)) != kFloat8Oid || ndim > 1) return std::nullopt;
  std::vector<double> values;
  if (ndim == 1) {
    if (f->size() < 20 || get_be(f->substr(16, 4)) != 1) return std::nullopt;
    const std::uint64_t n = get_be(f->substr(12, 4));
    CopyReader elements(f->substr(20));
    for (std::uint64_t i = 0; i < n; ++i) {
      auto v = elements.float8();
      if (!v) return std::nullopt;
      values.push_back(*v);
    }
    if (!elements.done()) return std::nullopt;
  } else if (f->size() != 12) {
    return std::nullopt;
  }
  *this = outer;
  return values;
}

}  // namespace tcl::registry::internal
