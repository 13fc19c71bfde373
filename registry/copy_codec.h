// registry/copy_codec.h — PostgreSQL's binary COPY format (COPY ... FROM
// STDIN (FORMAT binary)): the file header and trailer, and tuples of fields
// in each type's binary send/recv form, big-endian. Encoding is what an
// upload streams (upload_writer.cc, upload_staging.cc); decoding reads the
// same bytes back (tests, diagnostics). Plain C++: no libpq here; the
// transport is upload_copy.cc's.
// Thread-safety: pure functions; a CopyReader is a value over borrowed bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tcl::registry::internal {

// Signature, flags (0), header extension length (0); and the int16 -1 that ends the data.
inline constexpr std::string_view kCopyHeader{"PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0", 19};
inline constexpr std::string_view kCopyTrailer{"\377\377", 2};

void put_be16(std::string& out, std::uint16_t v);
void put_be32(std::string& out, std::uint32_t v);
void put_be64(std::string& out, std::uint64_t v);
std::uint64_t double_bits(double v);

// A tuple starts with its field count; each field is a big-endian int32
// length, then the value.
inline void begin_tuple(std::string& out, std::uint16_t fields) { put_be16(out, fields); }
void field_bytes(std::string& out, std::string_view bytes);  // text (the server checks the encoding), uuid
void field_int4(std::string& out, std::int32_t v);
void field_int8(std::string& out, std::int64_t v);
void field_float8(std::string& out, double v);
// float8[] as array_send writes it (one dimension, lower bound 1, no NULLs).
void field_float8_array(std::string& out, std::span<const double> values);

// Reads tuples as the functions above write them. Each call consumes one
// item and returns nullopt (consuming nothing) when the bytes do not hold one
// of that shape: too short, a wrong length, a NULL field.
class CopyReader {
 public:
  explicit CopyReader(std::string_view bytes) : rest_(bytes) {}
  std::optional<std::uint16_t> tuple();  // the field count
  std::optional<std::string_view> bytes();
  std::optional<std::int32_t> int4();
  std::optional<std::int64_t> int8();
  std::optional<double> float8();
  std::optional<std::vector<double>> float8_array();
  bool done() const { return rest_.empty(); }

 private:
  std::optional<std::string_view> field();
  std::string_view rest_;
};

}  // namespace tcl::registry::internal
