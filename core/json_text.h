// core/json_text.h — internal: appends JSON scalars to a std::string without
// temporary allocations (record writer, canonical program form).
// Thread-safety: pure functions.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace tcl::core {

inline void append_int(std::string* out, std::int64_t x) {
  char buf[24];
  const auto res = std::to_chars(buf, buf + sizeof buf, x);
  out->append(buf, res.ptr);
}

// Shortest text that reads back to the same double ("1.5526e-05", "0.1",
// "1754209236"). Callers guarantee `x` is finite (JSON has no NaN/Infinity).
inline void append_double(std::string* out, double x) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, x);
  out->append(buf, res.ptr);
}

// A JSON string literal, quotes included; escapes '"', '\\' and control chars.
inline void append_json_string(std::string* out, std::string_view s) {
  out->push_back('"');
  std::size_t run = 0;  // start of the current run of plain characters
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out->append(esc, 6);
      }
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

}  // namespace tcl::core
