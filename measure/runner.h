// measure/runner.h — runs the programs of a built module in a child process
// (fork + pipe), so that a crash or a hang is a failed measurement, never a
// dead agent.
//
// The child loads the module (Backend::open) and runs the programs in order,
// reporting "started i" and "done i" over a pipe. If it dies while program i
// runs, i gets error_no 4 (runtime device error, with the signal); if i runs
// past the timeout, the child is killed and i gets error_no 7 (run timeout).
// A fresh child then goes on with i + 1, as it does after a program that
// left the session unusable (Session::usable()). Measuring happens in the child only;
// the parent never runs generated code.
//
// Thread-safety: run_isolated() is reentrant; `backend` must be usable from a
// forked child (the CPU backend is). The child is forked without exec, so in
// a multi-threaded host (tcld) a lock held by another thread at fork time
// (a concurrent dlopen) can stall the child: that shows as a run timeout,
// never as a hang of the host.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "measure/backend.h"

namespace tcl::measure {

struct RunnerOptions {
  // Wall-clock limit of one program in the child (verification against the
  // reference, warm-up and timing together).
  double timeout_seconds = 10;
  TimingOptions timing;
};

// Runs programs[i] under symbols[i] from `module_path`; returns one result
// per program, in order. `on_result(i, result)` is called as each one is
// known, in order of i.
std::vector<RunResult> run_isolated(const Backend& backend, const std::string& module_path,
                                    std::span<const Program> programs, std::span<const std::string> symbols,
                                    const RunnerOptions& options,
                                    const std::function<void(std::size_t, const RunResult&)>& on_result = {});

}  // namespace tcl::measure
