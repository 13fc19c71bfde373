// tests/registry/pg_cluster_test.cc — the test harness's PostgreSQL
// (tests/lib/pg_cluster.h): a free port picked for it can be taken by
// another process before the server binds it (seen once in CI's contract
// run); the first start then moves to another port instead of failing.
#include "tests/lib/pg_cluster.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tcl::testing {
namespace {

TEST(PgClusterTest, AFirstStartOnATakenPortMovesToAFreeOne) {
  // Someone else listens on 127.0.0.1:taken.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int taken = ntohs(addr.sin_port);

  PgCluster cluster(taken);
  EXPECT_NE(cluster.port(), taken);
  EXPECT_NE(cluster.create_database().find(":" + std::to_string(cluster.port()) + "/"), std::string::npos);
  ::close(fd);
}

}  // namespace
}  // namespace tcl::testing
