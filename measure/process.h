// measure/process.h — running a command (the compiler) with a wall-clock
// limit, in its own process group so that a timeout ends its children too.
//
// Thread-safety: thread-safe (no shared state).
#pragma once

#include <string>
#include <vector>

namespace tcl::measure {

struct CommandResult {
  bool started = false;    // false: fork/exec failed (output says why)
  bool timed_out = false;  // killed after the limit
  int exit_code = -1;      // when it exited normally
  std::string output;      // stdout and stderr, the last 4 KB
};

// Runs argv[0] (looked up on PATH) with `argv`, waits at most
// `timeout_seconds`. Never throws.
CommandResult run_command(const std::vector<std::string>& argv, double timeout_seconds);

}  // namespace tcl::measure
