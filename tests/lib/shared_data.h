// tests/lib/shared_data.h — the real records of ../shared/data, read at run
// time (never copied into the repository). Header-only: TCL_SOURCE_DIR comes
// from the including test (tcl_add_test defines it).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/line_reader.h"

namespace tcl::testing {

inline const std::string kSharedData = std::string(TCL_SOURCE_DIR) + "/../shared/data";

// The first `n` lines of a platform's records (fewer if the file is shorter);
// throws when the file cannot be read.
inline std::vector<std::string> shared_data_lines(const std::string& platform, std::size_t n) {
  const std::string path = kSharedData + "/" + platform + "/records.jsonl.gz";
  auto reader = core::LineReader::open(path);
  if (!reader) throw std::runtime_error("cannot open " + path + ": " + reader.status().message());
  std::vector<std::string> out;
  std::string_view line;
  while (out.size() < n && (*reader)->next(&line)) out.emplace_back(line);
  return out;
}

}  // namespace tcl::testing
