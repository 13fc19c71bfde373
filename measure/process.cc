#include "measure/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace tcl::measure {

namespace {

// Waits for the child `pid` (its own process group) while reading its
// output from `out_fd`; kills the group past the deadline.
CommandResult wait_for_child(pid_t pid, int out_fd, double timeout_seconds) {
  CommandResult result;
  fcntl(out_fd, F_SETFL, O_NONBLOCK);
  result.started = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  char buf[4096];
  int status = 0;
  for (;;) {
    ssize_t n;
    while ((n = read(out_fd, buf, sizeof(buf))) > 0) {
      result.output.append(buf, static_cast<std::size_t>(n));
      if (result.output.size() > 8192) result.output.erase(0, result.output.size() - 4096);
    }
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ssize_t n;
  while ((n = read(out_fd, buf, sizeof(buf))) > 0) result.output.append(buf, static_cast<std::size_t>(n));
  close(out_fd);
  if (result.output.size() > 4096) result.output.erase(0, result.output.size() - 4096);
  if (!result.timed_out && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (!result.timed_out && WIFSIGNALED(status))
    result.output += std::string("\nkilled by signal ") + strsignal(WTERMSIG(status));
  return result;
}

// Forks a child in its own process group with stdout and stderr on a pipe;
// the child runs `child` and never returns. -1 and *error on failure.
template <typename Child>
pid_t spawn(int* out_fd, std::string* error, Child child) {
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return -1;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out_pipe[1], 1);
    dup2(out_pipe[1], 2);
    // Nothing else of the parent's (sibling builds' pipes, a host's sockets).
    close_range(3, ~0U, 0);
    child();
  }
  setpgid(pid, pid);  // also from the parent: no race with the kill in wait_for_child
  close(out_pipe[1]);
  *out_fd = out_pipe[0];
  return pid;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, double timeout_seconds) {
  CommandResult result;
  if (argv.empty()) {
    result.output = "empty command";
    return result;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int out_fd = -1;
  const pid_t pid = spawn(&out_fd, &result.output, [&] {
    execvp(args[0], args.data());
    const char msg[] = "exec failed\n";
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(127);
  });
  if (pid < 0) return result;
  return wait_for_child(pid, out_fd, timeout_seconds);
}

CommandResult run_forked(const std::function<int()>& body, double timeout_seconds) {
  CommandResult result;
  int out_fd = -1;
  const pid_t pid = spawn(&out_fd, &result.output, [&] {
    // No stdio flush: stdout's buffer is a copy of the parent's. An exception
    // must not unwind into the parent's copied stack.
    try {
      _exit(body());
    } catch (...) {
      _exit(kForkedBodyThrew);
    }
  });
  if (pid < 0) return result;
  return wait_for_child(pid, out_fd, timeout_seconds);
}

}  // namespace tcl::measure
