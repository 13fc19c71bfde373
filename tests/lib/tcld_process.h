// tests/lib/tcld_process.h — runs the real tcld binary for end-to-end tests.
//
// start() forks and execs build/daemon/tcld with the given arguments on a
// free loopback port, output to a log file, then waits until its log says it
// listens on that port (info level) and answers there; a process that lost
// its port to a parallel test is started again on another. stop() sends SIGTERM and returns the exit status; kill()
// sends SIGKILL. The destructor kills a process still running. Not thread-safe.
//
// Contract mode (TCL_CONTRACT_PROXY=1 in the environment; scripts/test.sh runs
// the e2e tests only so): a "serve" process without TLS also gets
// `prism proxy api/openapi.yaml <tcld>` on a second free port, and port()
// returns the proxy's, so every request and response of the test is checked
// against the API document. stop()/kill()/the destructor add a gtest failure
// for every response violation in Prism's log (any client: tclctl too);
// http_client.h fails a request the document rejects unless tcld rejected it
// too (4xx). Prism runs without --errors so that tcld, not Prism, answers the
// tests' deliberately bad requests. tcld_port() is tcld's own port.
// TCL_CONTRACT_LOG_DIR=<dir> keeps each test's Prism log there.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
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
  // Starts and waits until ready (serve: its log names its port, then /healthz
  // answers, or a TLS connect succeeds; worker: "worker: running"; contract
  // mode: Prism likewise); false (and the log in `log()`) on failure.
  bool start(std::chrono::milliseconds wait = std::chrono::seconds(30));
  int stop(std::chrono::milliseconds wait = std::chrono::seconds(30));  // SIGTERM; exit code or -1
  void kill();
  int port() const { return proxy_pid_ > 0 ? proxy_port_ : port_; }
  int tcld_port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string log() const;
  std::string proxy_log() const;  // Prism's output; empty outside contract mode
  // An admin token created through `tcld token create` on this database.
  std::string create_token(const std::string& name, const std::string& scope);

 private:
  std::string database_url_;
  std::vector<std::string> extra_args_;
  std::string command_;
  bool start_proxy(std::chrono::milliseconds wait);
  void stop_proxy();  // ends Prism and reports the violations it logged

  std::string log_path_;
  std::string proxy_log_path_;
  int port_ = 0;
  pid_t pid_ = -1;
  int proxy_port_ = 0;
  pid_t proxy_pid_ = -1;
  std::size_t violations_reported_ = 0;  // lines of proxy_log() already reported
};

}  // namespace tcl::testing
