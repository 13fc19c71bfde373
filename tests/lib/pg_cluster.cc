#include "tests/lib/pg_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace tcl::testing {
namespace {

constexpr const char* kPgBin = "/usr/lib/postgresql/15/bin";

int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("bind to a free port failed");
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Runs `cmd` (as postgres when we are root); throws with the output on failure.
void run_pg(const std::string& cmd, const std::string& log) {
  std::string full = (::geteuid() == 0 ? "runuser -u postgres -- " : "") + cmd + " >>" + log + " 2>&1";
  if (std::system(full.c_str()) != 0) {
    throw std::runtime_error("command failed: " + cmd + " (see " + log + ")");
  }
}

// An initialized data directory made once per machine and user, which each
// cluster copies: ctest runs every test case as a process of its own, so a
// suite starts hundreds of clusters, and a copy costs a third of an initdb
// (~0.7 s against ~2 s on two cores). Made under a lock, moved into place
// whole, so a reader never sees half of one.
std::string template_data_dir() {
  const std::string dir = "/tmp/tcl-test-pg-template-15-" + std::to_string(::geteuid());
  const int lock = ::open((dir + ".lock").c_str(), O_CREAT | O_RDWR, 0600);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) throw std::runtime_error("cannot lock " + dir + ".lock");
  std::error_code ec;
  if (!std::filesystem::exists(dir + "/data/PG_VERSION", ec)) {
    char tmpl[] = "/tmp/tcl-test-pg-template-new-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    const std::string fresh = tmpl;
    if (::geteuid() == 0) std::system(("chown postgres:postgres " + fresh).c_str());
    run_pg(std::string(kPgBin) + "/initdb -D " + fresh + "/data -U postgres -A trust --no-sync -E UTF8",
           fresh + "/setup.log");
    std::filesystem::remove_all(dir, ec);
    std::filesystem::rename(fresh, dir);
  }
  ::close(lock);  // releases the lock
  return dir + "/data";
}

}  // namespace

PgCluster& PgCluster::shared() {
  static PgCluster cluster;
  return cluster;
}

PgCluster::PgCluster(int first_port) {
  char tmpl[] = "/tmp/tcl-test-pg-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  if (::geteuid() == 0) {
    std::system(("chown postgres:postgres " + dir_).c_str());
  }
  const std::string log = dir_ + "/setup.log";
  // cp -a keeps the owner (postgres) and the 0700 mode PostgreSQL insists on.
  const std::string copy = "cp -a " + template_data_dir() + " " + dir_ + "/data >>" + log + " 2>&1";
  if (std::system(copy.c_str()) != 0) throw std::runtime_error("command failed: " + copy);
  for (int attempt = 1;; ++attempt) {
    port_ = attempt == 1 && first_port > 0 ? first_port : free_loopback_port();
    try {
      start();
      return;
    } catch (const std::runtime_error&) {
      if (attempt == kStartTries) throw;  // not a taken port, or every one taken: the error names the log
    }
  }
}

PgCluster::~PgCluster() {
  try {
    stop();
  } catch (...) {
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void PgCluster::start() {
  if (running_) return;
  const std::string opts = "-c listen_addresses=127.0.0.1 -c port=" + std::to_string(port_) +
                           " -c unix_socket_directories=" + dir_ +
                           " -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200";
  run_pg(std::string(kPgBin) + "/pg_ctl -D " + dir_ + "/data -l " + dir_ + "/server.log -w -o \"" + opts + "\" start",
         dir_ + "/setup.log");
  running_ = true;
}

void PgCluster::stop() {
  if (!running_) return;
  run_pg(std::string(kPgBin) + "/pg_ctl -D " + dir_ + "/data -m fast -w stop", dir_ + "/setup.log");
  running_ = false;
}

std::string PgCluster::url(const std::string& database) const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

std::string PgCluster::create_database() {
  const std::string name = "t" + std::to_string(::getpid()) + "_" + std::to_string(next_db_++);
  const std::string cmd = "/usr/bin/psql -q -h 127.0.0.1 -p " + std::to_string(port_) +
                          " -U postgres -d postgres -c 'CREATE DATABASE " + name + "'";
  if (std::system((cmd + " >/dev/null").c_str()) != 0) {
    throw std::runtime_error("CREATE DATABASE " + name + " failed");
  }
  return url(name);
}

}  // namespace tcl::testing
