#include "tests/lib/tcld_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/lib/http_client.h"

#ifndef TCL_BINARY_DIR
#error "TCL_BINARY_DIR must be defined by the test's CMake target"
#endif

namespace tcl::testing {

std::string tcld_binary() { return std::string(TCL_BINARY_DIR) + "/daemon/tcld"; }

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
}

TcldProcess::~TcldProcess() {
  kill();
  ::unlink(log_path_.c_str());
}

bool TcldProcess::start(std::chrono::milliseconds wait) {
  port_ = free_port();
  std::vector<std::string> args = {tcld_binary(), command_, "--database-url", database_url_};
  if (command_ == "serve") {
    args.push_back("--listen");
    args.push_back("127.0.0.1:" + std::to_string(port_));
  }
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  pid_ = ::fork();
  if (pid_ < 0) return false;
  if (pid_ == 0) {
    const int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    if (command_ == "worker") {
      if (log().find("worker: running") != std::string::npos) return true;
    } else {
      const bool tls = std::find(extra_args_.begin(), extra_args_.end(), "--tls-cert") != extra_args_.end();
      if (tls ? HttpConnection(port_).open() : http_get(port_, "/healthz").status == 200) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

int TcldProcess::stop(std::chrono::milliseconds wait) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill();
  return -1;
}

void TcldProcess::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string TcldProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TcldProcess::create_token(const std::string& name, const std::string& scope) {
  std::string out;
  const int rc = run_tcld({"token", "create", "--name", name, "--scope", scope, "--database-url", database_url_}, &out);
  if (rc != 0) throw std::runtime_error("tcld token create failed with " + std::to_string(rc));
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace tcl::testing
