// tests/lib/pg_cluster.h — a throwaway PostgreSQL 15 cluster for tests.
//
// PgCluster::shared() starts one cluster per test binary on first use:
// initdb into a fresh temporary directory (as user `postgres` through runuser
// when running as root, since PostgreSQL refuses root), pg_ctl start on a free
// port on 127.0.0.1 with trust auth, and removes it all at process exit.
// A free port is not reserved: another test process may bind it before the
// server does, so the first start tries up to kStartTries ports.
// create_database() makes a fresh, empty database per test so tests never
// see each other's rows. stop()/start() let tests simulate an outage.
// Not thread-safe: call from the test's main thread.
#pragma once

#include <string>

namespace tcl::testing {

class PgCluster {
 public:
  static PgCluster& shared();
  static constexpr int kStartTries = 5;

  // A cluster of its own whose first start tries `first_port` (a test of the
  // retry: a port held by someone else), then free ones.
  explicit PgCluster(int first_port);

  // A new empty database; returns its libpq URL
  // ("postgresql://postgres@127.0.0.1:PORT/NAME").
  std::string create_database();
  std::string url(const std::string& database) const;
  int port() const { return port_; }

  void stop();   // pg_ctl stop -m fast
  void start();  // pg_ctl start, same port and data
  ~PgCluster();

 private:
  PgCluster() : PgCluster(0) {}
  std::string dir_;
  int port_ = 0;
  int next_db_ = 0;
  bool running_ = false;
};

}  // namespace tcl::testing
