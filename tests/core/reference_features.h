// tests/core/reference_features.h — a small reference implementation of the
// token encoding (core/features.h), written straight from the raw JSON steps
// with no use of core's Step struct, so that parser + encoder are checked
// against an independent reading of the layout table.
#pragma once

#include <boost/json.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/features.h"

namespace tcl::core::testing {

inline std::vector<float> reference_tokens(const boost::json::array& steps, int max_len) {
  namespace json = boost::json;
  static const char* kTags[] = {"AN", "FU", "PR", "RE", "SP",  "FSP", "FFSP",
                                "SA", "CA", "CI", "CR", "CHR", "CHW", "RF"};
  auto num = [](const json::value& v) { return v.to_number<double>(); };
  auto L = [](double x) { return x <= 0 ? 0.0f : static_cast<float>(std::log2(1.0 + x)); };
  auto id = [](double x) { return static_cast<float>(x / 16.0); };
  auto scope = [](const std::string& s) {
    if (s.rfind("shared", 0) == 0) return 0;
    if (s.rfind("local", 0) == 0) return 1;
    if (s.rfind("global", 0) == 0) return 2;
    return 3;
  };
  std::vector<float> out(static_cast<std::size_t>(max_len) * kTokenDim, 0.0f);
  const std::size_t n = std::min<std::size_t>(steps.size(), static_cast<std::size_t>(max_len));
  for (std::size_t i = 0; i < n; ++i) {
    const json::array& s = steps[i].as_array();
    const std::string tag(s[0].as_string());
    float* t = out.data() + i * kTokenDim;
    int kind = 14;
    for (int k = 0; k < 14; ++k) {
      if (tag == kTags[k]) kind = k;
    }
    t[kind] = 1;
    if (kind == 14) {
      if (s.size() > 1 && s[1].is_int64()) t[15] = id(num(s[1]));
      continue;
    }
    t[15] = id(num(s[1]));
    if (tag == "AN") {
      t[16] = id(num(s[2]));
      const int a = static_cast<int>(num(s[3]));
      if (a >= 0 && a < 12) t[28 + a] = 1;
    } else if (tag == "FU") {
      const auto& ids = s[2].as_array();
      if (!ids.empty()) t[16] = id(num(ids[0]));
      t[46] = L(static_cast<double>(ids.size()));
    } else if (tag == "PR") {
      t[16] = id(num(s[2]));
      const std::string p(s[3].as_string());
      const std::string prefix = "auto_unroll_max_step$";
      if (p.rfind(prefix, 0) == 0 && p.size() > prefix.size()) {
        t[40] = L(std::stod(p.substr(prefix.size())));
      } else {
        t[41] = 1;
      }
    } else if (tag == "RE") {
      t[46] = L(static_cast<double>(s[2].as_array().size()));
    } else if (tag == "SP") {
      t[16] = id(num(s[2]));
      t[19] = L(num(s[3]));
      const auto& lens = s[4].as_array();
      for (std::size_t k = 0; k < lens.size() && k < 4; ++k) t[20 + k] = L(num(lens[k]));
      t[24] = static_cast<float>(lens.size()) / 4;
      t[25] = static_cast<float>(num(s[5]));
    } else if (tag == "FSP") {
      t[16] = id(num(s[2]));
      t[26] = id(num(s[3]));
      const int src = static_cast<int>(num(s[3]));
      const int nsplit = static_cast<int>(num(s[4]));
      t[24] = static_cast<float>(nsplit) / 4;
      if (src >= 0 && static_cast<std::size_t>(src) < steps.size() &&
          steps[static_cast<std::size_t>(src)].as_array()[0].as_string() == "SP") {
        const auto& lens = steps[static_cast<std::size_t>(src)].as_array()[4].as_array();
        const int m = static_cast<int>(lens.size());
        if (nsplit >= 1 && nsplit <= m + 1) {
          std::vector<double> v;
          for (int k = 0; k < nsplit - 1; ++k) v.push_back(num(lens[static_cast<std::size_t>(k)]));
          double last = 1;
          for (int k = nsplit - 1; k < m; ++k) last *= num(lens[static_cast<std::size_t>(k)]);
          v.push_back(last);
          for (std::size_t k = 0; k < v.size() && k < 4; ++k) t[20 + k] = L(v[k]);
        }
      }
    } else if (tag == "FFSP") {
      t[16] = id(num(s[2]));
      const auto& ids = s[3].as_array();
      if (!ids.empty()) t[26] = id(num(ids[0]));
      const int level = static_cast<int>(num(s[4]));
      t[27] = id(level);
      t[25] = static_cast<float>(num(s[5]));
      t[24] = 0.25f;
      t[46] = L(static_cast<double>(ids.size()));
      double prod = 1;
      bool ok = true;
      for (const auto& x : ids) {
        const auto& src = steps[static_cast<std::size_t>(num(x))].as_array();
        const auto& lens = src[4].as_array();
        if (src[0].as_string() != "SP" || level < 0 || static_cast<std::size_t>(level) >= lens.size()) {
          ok = false;
          break;
        }
        prod *= num(lens[static_cast<std::size_t>(level)]);
      }
      if (ok) t[20] = L(prod);
    } else if (tag == "SA") {
      t[16] = id(num(s[2]));
      t[47] = L(num(s[3]));
      t[48] = L(num(s[4]));
    } else if (tag == "CA") {
      t[17] = id(num(s[2]));
      t[18] = id(num(s[3]));
    } else if (tag == "CHR") {
      t[42 + scope(std::string(s[2].as_string()))] = 1;
      const auto& readers = s[3].as_array();
      if (!readers.empty()) t[17] = id(num(readers[0]));
      t[46] = L(static_cast<double>(readers.size()));
    } else if (tag == "CHW") {
      t[42 + scope(std::string(s[2].as_string()))] = 1;
    } else if (tag == "RF") {
      t[16] = id(num(s[2]));
      t[49] = id(num(s[3]));
    }
  }
  return out;
}

}  // namespace tcl::core::testing
