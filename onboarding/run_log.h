// onboarding/run_log.h — the evaluation protocol's run log (bench_onboarding's
// runs.tsv): one line per finished run, "KEY\tVALUES\n", keyed by what shapes
// the run (platform, seed, strategy, settings), appended as each run
// finishes, so that a rerun skips what is there and a killed run resumes.
//
// VALUES is the caller's text (columns separated by spaces, a tab allowed);
// a line an older caller wrote with fewer columns is returned as it stands:
// reading the columns is the caller's. Loading skips blank lines, lines
// starting with '#' and lines without a tab; a key logged twice keeps its last
// line. A last line without its '\n' (a run killed while writing it) is left
// out, and cut off the file before the next add() appends.
//
// Not thread-safe; one writer per file. Plain C++.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/status.h"

namespace tcl::onboarding {

class RunLog {
 public:
  // The runs logged in `path` (none when it does not exist).
  explicit RunLog(std::string path);

  // The values logged under `key`, or null; valid until the next add().
  const std::string* find(const std::string& key) const;
  // Logs `values` under `key`: in memory, and appended to the file (closed
  // after each line, so a killed run loses at most the line it was writing).
  // kInvalidArgument when `key` is empty or holds a tab or a line break, or
  // `values` a line break; kInternal when the file cannot be written (the run
  // is still found in memory).
  Status add(const std::string& key, const std::string& values);
  std::size_t size() const { return runs_.size(); }
  // Every run logged, by key.
  const std::map<std::string, std::string>& runs() const { return runs_; }

 private:
  std::string path_;
  std::map<std::string, std::string> runs_;
  std::uintmax_t complete_bytes_ = 0;  // the file up to and with its last '\n'
  bool torn_ = false;                  // the file goes on past complete_bytes_
};

}  // namespace tcl::onboarding
