// core/json_write: doubles in plain decimal that read back exactly; the rest
// byte for byte as boost::json::serialize.
#include "core/json_write.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>

namespace tcl::core {
namespace {

std::string decimal(double x) {
  std::string s;
  append_decimal(&s, x);
  return s;
}

TEST(JsonWriteTest, OrdinaryDoublesArePlainDecimal) {
  EXPECT_EQ(decimal(3.156213277264645), "3.156213277264645");  // Boost.JSON: 3.156213277264645E0
  EXPECT_EQ(decimal(0.1), "0.1");
  EXPECT_EQ(decimal(-0.875), "-0.875");
  EXPECT_EQ(decimal(0.000001), "0.000001");
  EXPECT_EQ(decimal(123456789012345.0), "123456789012345.0");
}

TEST(JsonWriteTest, IntegerValuedDoublesKeepAPoint) {
  EXPECT_EQ(decimal(1.0), "1.0");
  EXPECT_EQ(decimal(2.0), "2.0");
  EXPECT_EQ(decimal(-40.0), "-40.0");
  EXPECT_EQ(decimal(0.0), "0.0");
  EXPECT_EQ(decimal(-0.0), "-0.0");
  // They read back as doubles, as Boost.JSON's "1E0" did.
  EXPECT_TRUE(boost::json::parse(write_json(boost::json::value(1.0))).is_double());
}

TEST(JsonWriteTest, ExtremeMagnitudesAreScientificWithALowercaseE) {
  EXPECT_EQ(decimal(1e-7), "1e-07");
  EXPECT_EQ(decimal(1e15), "1e+15");
  EXPECT_EQ(decimal(1.2345678901234568e17), "1.2345678901234568e+17");
  EXPECT_EQ(decimal(-2.5e-300), "-2.5e-300");
  EXPECT_EQ(decimal(std::numeric_limits<double>::denorm_min()), "5e-324");
  EXPECT_EQ(decimal(std::numeric_limits<double>::max()), "1.7976931348623157e+308");
}

TEST(JsonWriteTest, NanAndInfinityAsBoostJsonWritesThem) {
  const double inf = std::numeric_limits<double>::infinity();
  const boost::json::array a{inf, -inf, std::numeric_limits<double>::quiet_NaN()};
  EXPECT_EQ(write_json(a), boost::json::serialize(a));
  EXPECT_EQ(write_json(a), "[Infinity,-Infinity,NaN]");
}

// Every double (random bit patterns: all magnitudes, subnormals) reads back
// to itself through std::strtod and std::from_chars; Boost.JSON reads a double.
TEST(JsonWriteTest, RandomDoublesRoundTrip) {
  std::mt19937_64 gen(20);
  std::uniform_real_distribution<double> unit(-1, 1);
  for (int i = 0; i < 200000; ++i) {
    double x;
    if (i % 2 == 0) {
      const std::uint64_t bits = gen();
      std::memcpy(&x, &bits, sizeof x);
      if (!std::isfinite(x)) continue;
    } else {
      x = unit(gen) * std::pow(10.0, static_cast<int>(gen() % 24) - 8);  // the plain range and its edges
    }
    const std::string s = decimal(x);
    ASSERT_EQ(std::strtod(s.c_str(), nullptr), x) << s;
    double read = 0;
    ASSERT_EQ(std::from_chars(s.data(), s.data() + s.size(), read).ptr, s.data() + s.size()) << s;
    ASSERT_EQ(read, x) << s;
    // Boost.JSON 1.81's parser is not exact in the last bit for some inputs
    // (its own "E" output included); it reads a double, within an ulp or so.
    const boost::json::value back = boost::json::parse(s);
    ASSERT_TRUE(back.is_double()) << s;
    ASSERT_LE(std::fabs(back.get_double() - x), 4 * std::numeric_limits<double>::epsilon() * std::fabs(x)) << s;
    const double mag = std::fabs(x);
    if (mag >= 1e-6 && mag < 1e15) {
      ASSERT_EQ(s.find_first_of("eE"), std::string::npos) << s;
    }
  }
}

TEST(JsonWriteTest, EverythingButDoublesIsWhatBoostJsonWrites) {
  const boost::json::value v = boost::json::parse(
      R"({"id": 7, "big": 18446744073709551615, "neg": -9223372036854775808, "ok": true, "no": false,)"
      R"( "none": null, "s": "a/\"\\\u0001\n\t\u007f é", "nested": [[], {}, [1, {"k": "v"}]], "": ""})");
  EXPECT_EQ(write_json(v), boost::json::serialize(v));
}

TEST(JsonWriteTest, AJobsProgressReadsPlainly) {
  const boost::json::object p{
      {"phase", "training"}, {"epoch", 1}, {"epochs", 2}, {"loss", 3.156213277264645}, {"val_top1", 0.8}};
  EXPECT_EQ(write_json(p), R"({"phase":"training","epoch":1,"epochs":2,"loss":3.156213277264645,"val_top1":0.8})");
}

}  // namespace
}  // namespace tcl::core
