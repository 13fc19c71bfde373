// registry/copy_codec.h: every field type round-trips through the encoder
// and the reader, and the bytes are PostgreSQL's binary COPY layout.
#include "registry/copy_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace tcl::registry::internal {
namespace {

TEST(CopyCodec, EachFieldTypeRoundTrips) {
  const std::vector<double> costs{1.5e-3, -0.0, std::numeric_limits<double>::denorm_min(), 1e300};
  std::string out;
  begin_tuple(out, 7);
  field_int8(out, -1234567890123LL);
  field_bytes(out, std::string("program\0id", 10));
  field_int4(out, -7);
  field_float8(out, 3.25);
  field_float8_array(out, costs);
  field_float8_array(out, {});
  field_bytes(out, "");

  CopyReader r(out);
  EXPECT_EQ(r.tuple(), 7);
  EXPECT_EQ(r.int8(), -1234567890123LL);
  EXPECT_EQ(r.bytes(), std::string_view("program\0id", 10));
  EXPECT_EQ(r.int4(), -7);
  EXPECT_EQ(r.float8(), 3.25);
  const auto back = r.float8_array();
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->size(), costs.size());
  for (std::size_t i = 0; i < costs.size(); ++i) EXPECT_EQ(double_bits((*back)[i]), double_bits(costs[i])) << i;
  EXPECT_EQ(r.float8_array(), std::vector<double>{});
  EXPECT_EQ(r.bytes(), "");
  EXPECT_TRUE(r.done());
}

TEST(CopyCodec, BytesAreBigEndianWithLengths) {
  std::string out;
  field_int4(out, 0x01020304);
  EXPECT_EQ(out, std::string("\0\0\0\4\1\2\3\4", 8));
  out.clear();
  field_int8(out, -2);
  EXPECT_EQ(out, std::string("\0\0\0\x08\xff\xff\xff\xff\xff\xff\xff\xfe", 12));
  out.clear();
  field_float8_array(out, std::vector<double>{1.0});
  // length 32; ndim 1, no nulls, oid 701; length 1, lower bound 1; one float8 field.
  EXPECT_EQ(out, std::string("\0\0\0\x20"
                             "\0\0\0\1"
                             "\0\0\0\0"
                             "\0\0\x02\xbd"
                             "\0\0\0\1"
                             "\0\0\0\1"
                             "\0\0\0\x08"
                             "\x3f\xf0\0\0\0\0\0\0",
                             36));
  EXPECT_EQ(kCopyHeader.size(), 19u);
  EXPECT_EQ(kCopyHeader.substr(0, 11), std::string_view("PGCOPY\n\377\r\n\0", 11));
  EXPECT_EQ(CopyReader(kCopyTrailer).tuple(), 0xffff);  // int16 -1
}

TEST(CopyCodec, ReaderRejectsWhatIsNotThere) {
  std::string out;
  field_int4(out, 5);
  CopyReader r(out);
  EXPECT_FALSE(r.int8().has_value());  // a 4-byte field is no int8
  EXPECT_FALSE(r.float8_array().has_value());
  EXPECT_EQ(r.int4(), 5);              // nothing was consumed by the misses
  EXPECT_FALSE(r.int4().has_value());  // empty
  EXPECT_FALSE(CopyReader(std::string_view("\0\0\0\x09"
                                           "abc",
                                           7))
                   .bytes()
                   .has_value());                                                         // too short
  EXPECT_FALSE(CopyReader(std::string_view("\xff\xff\xff\xff", 4)).bytes().has_value());  // NULL
}

}  // namespace
}  // namespace tcl::registry::internal
