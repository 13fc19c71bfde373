// measure/process.h — running a command (the compiler), or a function that
// may crash or hang (an in-process device compiler), in a child process with
// a wall-clock limit, in its own process group so that a timeout ends its
// children too.
//
// Thread-safety: thread-safe (no shared state).
#pragma once

#include <functional>
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

// Runs `body` in a forked child (no exec); its return value is the child's
// exit status (an exception out of it: kForkedBodyThrew), what it writes to
// stderr or with write(2) to fd 1 or 2 is `output` (a crash adds "killed by
// signal ..."). Buffered stdout is not flushed: its buffer is a copy of the
// parent's. The child keeps fds 0-2 only. It inherits a copy of this
// process: `body` must not need a lock another thread may hold at the fork
// (the measurer forks while only its build threads run, and they hold none;
// glibc makes malloc usable in the child).
CommandResult run_forked(const std::function<int()>& body, double timeout_seconds);
inline constexpr int kForkedBodyThrew = 86;  // an unusual status: not one a body returns by chance

}  // namespace tcl::measure
