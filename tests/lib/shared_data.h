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
#include "core/record.h"

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

// `n` parsed records of a platform (fewer if the file is shorter): every
// `stride`-th line, blank and comment lines skipped, unparseable ones too;
// throws when the file cannot be read.
inline std::vector<core::Record> shared_data_records(const std::string& platform, std::size_t n,
                                                     std::size_t stride = 1) {
  const std::string path = kSharedData + "/" + platform + "/records.jsonl.gz";
  auto reader = core::LineReader::open(path);
  if (!reader) throw std::runtime_error("cannot open " + path + ": " + reader.status().message());
  std::vector<core::Record> out;
  core::RecordParser parser;
  core::Record r;
  std::string_view line;
  for (std::size_t i = 0; out.size() < n && (*reader)->next(&line); ++i) {
    if (i % stride == 0 && !core::is_skippable_line(line) && parser.parse(line, &r).is_ok()) out.push_back(r);
  }
  return out;
}

}  // namespace tcl::testing
