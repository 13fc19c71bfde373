// tests/lib/tcld_process.h — runs the real tcld binary for end-to-end tests.
//
// start() forks and execs build/daemon/tcld with the given arguments on a
// free loopback port, output to a log file, then waits until /healthz
// answers. stop() sends SIGTERM and returns the exit status; kill() sends
// SIGKILL. The destructor kills a process still running. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace tcl::testing {

std::string tcld_binary();  // path of the built tcld
int free_port();

// Runs tcld with `args` to completion (migrate, token ...); returns the exit
// code and fills stdout_text.
int run_tcld(const std::vector<std::string>& args, std::string* stdout_text);

class TcldProcess {
 public:
  // `args` follow the command ("serve": --listen is added; both get
  // --database-url). A "worker" has no HTTP port: start() waits for its
  // "worker: running" log line instead of /healthz.
  TcldProcess(std::string database_url, std::vector<std::string> extra_args = {}, std::string command = "serve");
  ~TcldProcess();
  // Starts and waits for /healthz; false (and the log in `log()`) on failure.
  bool start(std::chrono::milliseconds wait = std::chrono::seconds(30));
  int stop(std::chrono::milliseconds wait = std::chrono::seconds(30));  // SIGTERM; exit code or -1
  void kill();
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string log() const;
  // An admin token created through `tcld token create` on this database.
  std::string create_token(const std::string& name, const std::string& scope);

 private:
  std::string database_url_;
  std::vector<std::string> extra_args_;
  std::string command_;
  std::string log_path_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace tcl::testing
