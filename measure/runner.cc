#include "measure/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/record.h"

namespace tcl::measure {
namespace {

using Clock = std::chrono::steady_clock;

// One pipe message; smaller than PIPE_BUF, so every write is atomic.
constexpr int kMaxCosts = 64;
enum MessageKind : std::int32_t { kStarted = 0, kDone = 1, kLoadFailed = 2 };
struct Message {
  std::int32_t index = 0;
  std::int32_t kind = kStarted;
  std::int32_t error_no = 0;
  std::int32_t num_costs = 0;
  double costs[kMaxCosts] = {};
  char text[256] = {};
};
static_assert(sizeof(Message) <= PIPE_BUF);

// The child's exit status when its session is spent (Session::usable()
// false after the program it just reported): not a crash, go on afresh.
// An unusual value, so that no stray exit() in a program reads as this.
constexpr int kSessionSpentExit = 87;

void send(int fd, const Message& m) { (void)!write(fd, &m, sizeof(m)); }

void set_text(Message& m, const std::string& s) { std::strncpy(m.text, s.c_str(), sizeof(m.text) - 1); }

// The child's loop; returns its exit status.
int run_child(int fd, const Backend& backend, const std::string& module_path, std::span<const Program> programs,
              std::span<const std::string> symbols, std::size_t first, const RunnerOptions& options) {
  std::string error;
  auto session = backend.open(module_path, &error);
  if (!session) {
    Message m;
    m.kind = kLoadFailed;
    set_text(m, error);
    send(fd, m);
    return 0;
  }
  TimingOptions timing = options.timing;
  timing.repeat = std::clamp(timing.repeat, 1, kMaxCosts);
  for (std::size_t i = first; i < programs.size(); ++i) {
    Message start;
    start.index = static_cast<std::int32_t>(i);
    send(fd, start);
    RunResult r = session->run(programs[i], symbols[i], timing);
    Message done;
    done.index = static_cast<std::int32_t>(i);
    done.kind = kDone;
    done.error_no = r.error_no;
    done.num_costs = static_cast<std::int32_t>(std::min<std::size_t>(r.costs.size(), kMaxCosts));
    std::copy_n(r.costs.begin(), done.num_costs, done.costs);
    set_text(done, r.message);
    send(fd, done);
    if (!session->usable()) return kSessionSpentExit;
  }
  return 0;
}

// _exit: no atexit handlers of the parent's program in the child, and no
// exception unwinds into the parent's copied stack (it counts as a crash of
// the program that was running).
[[noreturn]] void child_main(int fd, const Backend& backend, const std::string& module_path,
                             std::span<const Program> programs, std::span<const std::string> symbols, std::size_t first,
                             const RunnerOptions& options) {
  try {
    _exit(run_child(fd, backend, module_path, programs, symbols, first, options));
  } catch (...) {
    _exit(1);
  }
}

RunResult failure(core::MeasureError e, std::string message) {
  RunResult r;
  r.error_no = static_cast<std::int32_t>(e);
  r.message = std::move(message);
  return r;
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

}  // namespace

std::vector<RunResult> run_isolated(const Backend& backend, const std::string& module_path,
                                    std::span<const Program> programs, std::span<const std::string> symbols,
                                    const RunnerOptions& options,
                                    const std::function<void(std::size_t, const RunResult&)>& on_result) {
  std::vector<RunResult> results(programs.size());
  auto finish = [&](std::size_t i, RunResult r) {
    results[i] = std::move(r);
    if (on_result) on_result(i, results[i]);
  };
  std::size_t next = 0;
  while (next < programs.size()) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      for (; next < programs.size(); ++next)
        finish(next, failure(core::MeasureError::kUnknownError, std::string("pipe: ") + std::strerror(errno)));
      break;
    }
    const pid_t pid = fork();
    if (pid < 0) {
      close(fds[0]);
      close(fds[1]);
      for (; next < programs.size(); ++next)
        finish(next, failure(core::MeasureError::kUnknownError, std::string("fork: ") + std::strerror(errno)));
      break;
    }
    if (pid == 0) {
      close(fds[0]);
      child_main(fds[1], backend, module_path, programs, symbols, next, options);
    }
    close(fds[1]);
    long current = -1;  // program started and not done
    auto since = Clock::now();
    bool child_gone = false;
    for (;;) {
      pollfd p{fds[0], POLLIN, 0};
      const int ready = poll(&p, 1, 50);
      if (ready > 0) {
        Message m;
        std::size_t got = 0;
        ssize_t n = 0;
        while (got < sizeof(m) && (n = read(fds[0], reinterpret_cast<char*>(&m) + got, sizeof(m) - got)) > 0)
          got += static_cast<std::size_t>(n);
        if (got < sizeof(m)) break;  // EOF: the child ended
        if (m.kind == kLoadFailed) {
          for (; next < programs.size(); ++next) finish(next, failure(core::MeasureError::kRuntimeDeviceError, m.text));
        } else if (m.kind == kStarted) {
          current = m.index;
          since = Clock::now();
        } else {
          RunResult r;
          r.error_no = m.error_no;
          r.costs.assign(m.costs, m.costs + std::clamp(m.num_costs, 0, kMaxCosts));
          r.message = m.text;
          finish(static_cast<std::size_t>(m.index), std::move(r));
          next = static_cast<std::size_t>(m.index) + 1;
          current = -1;
          since = Clock::now();
        }
        continue;
      }
      if (std::chrono::duration<double>(Clock::now() - since).count() > options.timeout_seconds) {
        kill(pid, SIGKILL);
        const std::size_t stuck = current >= 0 ? static_cast<std::size_t>(current) : next;
        if (stuck < programs.size()) {
          finish(stuck, failure(core::MeasureError::kRunTimeoutError,
                                "ran past " + std::to_string(options.timeout_seconds) + " s"));
        }
        next = stuck + 1;
        current = -1;
        child_gone = true;
        break;
      }
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    const bool spent = WIFEXITED(status) && WEXITSTATUS(status) == kSessionSpentExit && current < 0;
    if (!child_gone && !spent && next < programs.size()) {
      // The child died: blame the program it was running (or the next one,
      // so that we always make progress).
      const std::size_t crashed = current >= 0 ? static_cast<std::size_t>(current) : next;
      finish(crashed, failure(core::MeasureError::kRuntimeDeviceError, describe_exit(status)));
      next = crashed + 1;
    }
  }
  return results;
}

}  // namespace tcl::measure
