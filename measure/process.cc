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

CommandResult run_command(const std::vector<std::string>& argv, double timeout_seconds) {
  CommandResult result;
  if (argv.empty()) {
    result.output = "empty command";
    return result;
  }
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.output = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    result.output = std::string("fork: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return result;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out_pipe[1], 1);
    dup2(out_pipe[1], 2);
    execvp(args[0], args.data());
    const char msg[] = "exec failed\n";
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent: no race with the kill below
  close(out_pipe[1]);
  fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  result.started = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  char buf[4096];
  int status = 0;
  for (;;) {
    ssize_t n;
    while ((n = read(out_pipe[0], buf, sizeof(buf))) > 0) {
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
  while ((n = read(out_pipe[0], buf, sizeof(buf))) > 0) result.output.append(buf, static_cast<std::size_t>(n));
  close(out_pipe[0]);
  if (result.output.size() > 4096) result.output.erase(0, result.output.size() - 4096);
  if (!result.timed_out && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

}  // namespace tcl::measure
