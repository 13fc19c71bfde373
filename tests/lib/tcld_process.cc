#include "tests/lib/tcld_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/lib/http_client.h"

#ifndef TCL_BINARY_DIR
#error "TCL_BINARY_DIR must be defined by the test's CMake target"
#endif
#ifndef TCL_SOURCE_DIR
#error "TCL_SOURCE_DIR must be defined by the test's CMake target"
#endif

namespace tcl::testing {
namespace {

bool contract_mode() {
  const char* v = std::getenv("TCL_CONTRACT_PROXY");
  if (v == nullptr || std::string(v) != "1") return false;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return true;
  // scripts/contract/direct_tests.txt: the tests that bypass Prism, and why.
  const std::string test = std::string(info->test_suite_name()) + "." + info->name();
  std::ifstream list(std::string(TCL_SOURCE_DIR) + "/scripts/contract/direct_tests.txt");
  std::string line;
  while (std::getline(list, line)) {
    if (line.rfind(test + " ", 0) == 0) {
      std::fprintf(stderr, "contract mode: %s talks to tcld directly\n", test.c_str());
      return false;
    }
  }
  return true;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Forks and execs argv with stdout and stderr appended to log_path.
pid_t spawn(std::vector<std::string> args, const std::string& log_path) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  ::dup2(fd, 1);
  ::dup2(fd, 2);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  ::_exit(127);
}

// A free_port() is only free when asked: another test of a parallel ctest may
// bind it before our process does. So readiness is judged by the process's own
// log line naming the port, never by an answer on the port alone (which could
// come from another test's tcld), and a process that lost the race for its
// port is started again on another one.
constexpr int kPortAttempts = 3;

bool lost_port_race(const std::string& log_tail) {
  return log_tail.find("already in use") != std::string::npos || log_tail.find("EADDRINUSE") != std::string::npos;
}

// True, with pid set to -1, once the child has exited.
bool reaped(pid_t& pid) {
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) != pid) return false;
  pid = -1;
  return true;
}

}  // namespace

// TCL_TCLD_BINARY runs the tests against another build's tcld (a fix's test
// against the code before the fix, to see it fail).
std::string tcld_binary() {
  const char* other = std::getenv("TCL_TCLD_BINARY");
  return other && *other ? std::string(other) : std::string(TCL_BINARY_DIR) + "/daemon/tcld";
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

int run_tcld(const std::vector<std::string>& args, std::string* stdout_text) {
  std::string cmd = tcld_binary();
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  std::array<char, 4096> buf{};
  std::string out;
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
  const int status = ::pclose(p);
  if (stdout_text != nullptr) *stdout_text = out;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TcldProcess::TcldProcess(std::string database_url, std::vector<std::string> extra_args, std::string command)
    : database_url_(std::move(database_url)), extra_args_(std::move(extra_args)), command_(std::move(command)) {
  char tmpl[] = "/tmp/tcld-test-log-XXXXXX";
  const int fd = ::mkstemp(tmpl);
  if (fd >= 0) ::close(fd);
  log_path_ = tmpl;
  proxy_log_path_ = log_path_ + ".prism";
}

TcldProcess::~TcldProcess() {
  kill();
  ::unlink(log_path_.c_str());
  ::unlink(proxy_log_path_.c_str());
}

bool TcldProcess::start(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    const std::size_t log_start = log().size();
    port_ = free_port();
    std::vector<std::string> args = {tcld_binary(), command_, "--database-url", database_url_};
    if (command_ == "serve") {
      args.push_back("--listen");
      args.push_back("127.0.0.1:" + std::to_string(port_));
    }
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    pid_ = spawn(std::move(args), log_path_);
    if (pid_ < 0) return false;
    const bool tls = std::find(extra_args_.begin(), extra_args_.end(), "--tls-cert") != extra_args_.end();
    const std::string listening =
        std::string("http: listening on ") + (tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
    while (std::chrono::steady_clock::now() < deadline && !reaped(pid_)) {
      const std::string tail = log().substr(log_start);
      if (command_ == "worker") {
        if (tail.find("worker: running") != std::string::npos) return true;
      } else if (tail.find(listening) != std::string::npos) {
        if (tls) {
          if (HttpConnection(port_).open()) return true;
        } else if (http_get(port_, "/healthz").status == 200) {
          // Prism speaks plain HTTP only, so TLS processes are not proxied.
          return !contract_mode() || start_proxy(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         deadline - std::chrono::steady_clock::now()));
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // Still running at the deadline, or gone for another reason than its port.
    if (pid_ > 0 || !lost_port_race(log().substr(log_start))) return false;
    if (std::chrono::steady_clock::now() >= deadline) return false;
  }
  return false;
}

bool TcldProcess::start_proxy(std::chrono::milliseconds wait) {
  const std::string prism = std::string(TCL_SOURCE_DIR) + "/scripts/contract/node_modules/.bin/prism";
  if (::access(prism.c_str(), X_OK) != 0) {
    std::ofstream(log_path_, std::ios::app)
        << "contract mode: " << prism << " missing; run scripts/contract/setup.sh\n";
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    const std::size_t log_start = proxy_log().size();
    proxy_port_ = free_port();
    proxy_pid_ = spawn(
        {prism, "proxy", std::string(TCL_SOURCE_DIR) + "/api/openapi.yaml", "http://127.0.0.1:" + std::to_string(port_),
         "--host", "127.0.0.1", "--port", std::to_string(proxy_port_)},
        proxy_log_path_);
    if (proxy_pid_ < 0) return false;
    const std::string listening = "Prism is listening on http://127.0.0.1:" + std::to_string(proxy_port_);
    while (std::chrono::steady_clock::now() < deadline && !reaped(proxy_pid_)) {
      if (proxy_log().find(listening, log_start) != std::string::npos &&
          http_get(proxy_port_, "/healthz").status == 200) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (proxy_pid_ > 0 || !lost_port_race(proxy_log().substr(log_start))) return false;
    if (std::chrono::steady_clock::now() >= deadline) return false;
  }
  return false;
}

void TcldProcess::stop_proxy() {
  if (proxy_pid_ <= 0) return;
  ::kill(proxy_pid_, SIGTERM);
  int status = 0;
  ::waitpid(proxy_pid_, &status, 0);
  proxy_pid_ = -1;
  // Prism logs "The upstream call to <path> has returned <status>" for each
  // exchange, then each violation as "Violation: <where> <what>" at error or
  // warning level, and "Request terminated with error" where it answered
  // itself. A response violation breaks the document whoever the client was,
  // at either level (an undocumented status code is only a warning to Prism);
  // request violations are judged per exchange, with the status, in
  // http_client.cc.
  std::istringstream lines(proxy_log());
  std::string line, exchange;
  std::size_t n = 0;
  while (std::getline(lines, line)) {
    if (n++ < violations_reported_) continue;
    if (line.find("The upstream call to") != std::string::npos) exchange = line.substr(line.find("The upstream"));
    const bool response_violation = line.find("Violation: response") != std::string::npos;
    const bool prism_error = line.find("Request terminated with error") != std::string::npos;
    if (response_violation || prism_error) {
      ADD_FAILURE() << "API contract (prism, api/openapi.yaml): " << line.substr(line.find("] ") + 2)
                    << (response_violation ? "\n  after: " + exchange : "");
    }
  }
  violations_reported_ = n;
  // TCL_CONTRACT_LOG_DIR keeps Prism's log of each test, for a look at every exchange.
  const char* keep = std::getenv("TCL_CONTRACT_LOG_DIR");
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (keep != nullptr && info != nullptr) {
    std::ofstream(std::string(keep) + "/" + info->test_suite_name() + "." + info->name() + ".prism.log", std::ios::app)
        << proxy_log();
  }
}

int TcldProcess::stop(std::chrono::milliseconds wait) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      stop_proxy();
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill();
  return -1;
}

void TcldProcess::kill() {
  stop_proxy();
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string TcldProcess::log() const { return read_file(log_path_); }

std::string TcldProcess::proxy_log() const { return read_file(proxy_log_path_); }

std::string TcldProcess::create_token(const std::string& name, const std::string& scope) {
  std::string out;
  const int rc = run_tcld({"token", "create", "--name", name, "--scope", scope, "--database-url", database_url_}, &out);
  if (rc != 0) throw std::runtime_error("tcld token create failed with " + std::to_string(rc));
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace tcl::testing
