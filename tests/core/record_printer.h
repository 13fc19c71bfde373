// tests/core/record_printer.h — lets gtest print a Record as its JSON line
// (and a Step as its compact JSON) instead of raw bytes.
#pragma once

#include <cstdio>
#include <ostream>
#include <span>
#include <string>

#include "core/record.h"

namespace tcl::core {

inline void PrintTo(const Record& r, std::ostream* os) {
  Record copy = r;
  if (copy.workload_key.empty()) copy.workload_key = "<empty>";
  std::string line = write_record(copy);
  char buf[64];
  for (double c : {r.all_cost, r.timestamp}) {
    std::snprintf(buf, sizeof buf, " [%.17g]", c);
    line += buf;
  }
  *os << line;
}

inline void PrintTo(const Step& s, std::ostream* os) {
  std::string out;
  write_steps(std::span<const Step>(&s, 1), &out);
  *os << out;
}

}  // namespace tcl::core
