#include "core/json_write.h"

#include <charconv>
#include <cmath>
#include <string_view>

#include "core/json_text.h"

namespace tcl::core {

void append_decimal(std::string* out, double x) {
  if (std::isnan(x)) {
    out->append("NaN");
    return;
  }
  if (std::isinf(x)) {
    out->append(x < 0 ? "-Infinity" : "Infinity");
    return;
  }
  // Fixed notation stops being readable past 15 integer digits and before
  // the sixth decimal place; zero is fixed too.
  const double mag = std::fabs(x);
  const bool fixed = mag == 0 || (mag >= 1e-6 && mag < 1e15);
  char buf[64];  // the longest fixed form in range: "-0.000001" + 17 digits
  const auto res =
      std::to_chars(buf, buf + sizeof buf, x, fixed ? std::chars_format::fixed : std::chars_format::scientific);
  const std::string_view text(buf, static_cast<std::size_t>(res.ptr - buf));
  out->append(text);
  if (fixed && text.find('.') == std::string_view::npos) out->append(".0");
}

namespace {

void write_value(std::string* out, const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::null: out->append("null"); return;
    case boost::json::kind::bool_: out->append(v.get_bool() ? "true" : "false"); return;
    case boost::json::kind::int64: append_int(out, v.get_int64()); return;
    case boost::json::kind::uint64: {
      char buf[24];
      const auto res = std::to_chars(buf, buf + sizeof buf, v.get_uint64());
      out->append(buf, res.ptr);
      return;
    }
    case boost::json::kind::double_: append_decimal(out, v.get_double()); return;
    case boost::json::kind::string: append_json_string(out, v.get_string()); return;
    case boost::json::kind::array: {
      out->push_back('[');
      bool first = true;
      for (const auto& x : v.get_array()) {
        if (!first) out->push_back(',');
        first = false;
        write_value(out, x);
      }
      out->push_back(']');
      return;
    }
    case boost::json::kind::object: {
      out->push_back('{');
      bool first = true;
      for (const auto& [key, x] : v.get_object()) {
        if (!first) out->push_back(',');
        first = false;
        append_json_string(out, key);
        out->push_back(':');
        write_value(out, x);
      }
      out->push_back('}');
      return;
    }
  }
}

}  // namespace

std::string write_json(const boost::json::value& v) {
  std::string out;
  write_value(&out, v);
  return out;
}

}  // namespace tcl::core
