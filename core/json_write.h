// core/json_write.h — JSON text for people and parsers alike: the one place
// where tcld (and tclctl) turn a boost::json::value into text.
//
// Boost.JSON's serializer writes every double in scientific form
// ("3.156213277264645E0", "1E0"); here a double is the shortest decimal that
// reads back to the same value, in plain notation for ordinary magnitudes:
//   0.1, 3.156213277264645, 2.0, 0.000001, 123456789012345.0
// and in scientific notation with a lowercase e outside 1e-6 <= |x| < 1e15:
//   1e-07, 1.2345678901234568e+17
// Integer-valued doubles keep a ".0" so that they read back as doubles (a
// parser that types numbers sees the same kind it would have seen before).
// NaN and infinities are written as Boost.JSON writes them today ("NaN",
// "Infinity", "-Infinity"; not JSON, and nothing we answer holds them).
// Everything else (strings, integers, layout: no spaces) is byte for byte
// what boost::json::serialize writes.
// Thread-safety: pure functions.
#pragma once

#include <boost/json/value.hpp>

#include <string>

namespace tcl::core {

// Appends `x` as described above.
void append_decimal(std::string* out, double x);

// `v` as compact JSON text, doubles as append_decimal writes them.
std::string write_json(const boost::json::value& v);

}  // namespace tcl::core
