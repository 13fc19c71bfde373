// bench/lib/records.h — the benches' one record loader: the records of a
// file (.jsonl, or .jsonl.gz as /work/shared/data/<platform>/ holds them),
// skippable lines (blank, comments) left out, lines that do not parse
// counted and skipped.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/line_reader.h"
#include "core/record.h"

namespace tcl::bench {

// Calls `fn` with every parsed record of `path`, in file order, until it
// returns false. `unparsed`, when given, receives the count of lines that
// did not parse. False, with the reader's error on stderr, when the file
// cannot be read.
inline bool for_each_record(const std::string& path, const std::function<bool(core::Record&)>& fn,
                            std::int64_t* unparsed = nullptr) {
  auto reader = core::LineReader::open(path);
  if (!reader) {
    std::fprintf(stderr, "%s\n", reader.status().to_string().c_str());
    return false;
  }
  core::RecordParser parser;
  core::Record rec;
  std::string_view line;
  while ((*reader)->next(&line)) {
    if (core::is_skippable_line(line)) continue;
    if (!parser.parse(line, &rec)) {
      if (unparsed) ++*unparsed;
      continue;
    }
    if (!fn(rec)) return true;
  }
  if (!(*reader)->status()) {
    std::fprintf(stderr, "%s\n", (*reader)->status().to_string().c_str());
    return false;
  }
  return true;
}

// The records of `path` that `keep` keeps (every one when empty), the first
// `max` when max > 0, appended to `out`; `unparsed` as for_each_record's.
// False, with a message on stderr, when unreadable.
inline bool load_records(const std::string& path, std::vector<core::Record>* out, std::int64_t max = 0,
                         const std::function<bool(const core::Record&)>& keep = {}, std::int64_t* unparsed = nullptr) {
  if (max > 0 && static_cast<std::int64_t>(out->size()) >= max) return true;
  return for_each_record(
      path,
      [&](core::Record& r) {
        if (!keep || keep(r)) out->push_back(r);
        return max <= 0 || static_cast<std::int64_t>(out->size()) < max;
      },
      unparsed);
}

}  // namespace tcl::bench
