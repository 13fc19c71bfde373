#include "registry/pg_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "registry/pg_pool_internal.h"
#include "tests/registry/registry_test_env.h"

namespace tcl::registry {
namespace {

using namespace std::chrono_literals;
using tcl::testing::PgCluster;
using testing::make_pool;
using testing::query_text;
using Clock = std::chrono::steady_clock;

int backend_pid(PgPool::Lease& lease) {
  pqxx::nontransaction tx(lease.conn());
  return tx.exec1("SELECT pg_backend_pid()")[0].as<int>();
}

TEST(PgPool, CheckoutLimitAndTimeoutGiveUnavailable) {
  auto pool = make_pool(PgCluster::shared().create_database(), 2, 200ms);
  auto a = pool->acquire();
  auto b = pool->acquire();
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_NE(backend_pid(*a), backend_pid(*b));

  PgPoolStats stats = pool->stats();
  EXPECT_EQ(stats.size, 2);
  EXPECT_EQ(stats.open, 2);
  EXPECT_EQ(stats.in_use, 2);
  EXPECT_EQ(stats.waiting, 0);

  const auto start = Clock::now();
  auto c = pool->acquire();
  const auto waited = Clock::now() - start;
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_GE(waited, 190ms);
  EXPECT_LT(waited, 2s);
  EXPECT_EQ(pool->stats().open, 2);
}

TEST(PgPool, LeaseReturnsTheConnectionWhenItDies) {
  auto pool = make_pool(PgCluster::shared().create_database(), 1, 200ms);
  int pid = 0;
  {
    auto lease = pool->acquire();
    ASSERT_TRUE(lease.is_ok());
    pid = backend_pid(*lease);
    EXPECT_EQ(pool->stats().in_use, 1);
  }
  PgPoolStats stats = pool->stats();
  EXPECT_EQ(stats.open, 1);
  EXPECT_EQ(stats.in_use, 0);

  // The same connection comes back (it was returned, not closed).
  auto again = pool->acquire();
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ(backend_pid(*again), pid);
}

TEST(PgPool, MovedLeaseIsReturnedOnce) {
  auto pool = make_pool(PgCluster::shared().create_database(), 1, 200ms);
  {
    auto lease = pool->acquire();
    ASSERT_TRUE(lease.is_ok());
    PgPool::Lease moved(std::move(*lease));
    EXPECT_EQ(pool->stats().in_use, 1);
  }
  EXPECT_EQ(pool->stats().in_use, 0);
  EXPECT_EQ(pool->stats().open, 1);
  EXPECT_TRUE(pool->acquire().is_ok());
}

TEST(PgPool, WaiterGetsTheReleasedConnection) {
  auto pool = make_pool(PgCluster::shared().create_database(), 1, 5s);
  std::optional<PgPool::Lease> held;
  {
    auto lease = pool->acquire();
    ASSERT_TRUE(lease.is_ok());
    held.emplace(std::move(*lease));
  }
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    auto lease = pool->acquire();
    got = lease.is_ok();
  });
  const auto deadline = Clock::now() + 5s;
  while (pool->stats().waiting != 1 && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(pool->stats().waiting, 1);
  held.reset();  // RAII return wakes the waiter
  waiter.join();
  EXPECT_TRUE(got);
  EXPECT_EQ(pool->stats().waiting, 0);
  EXPECT_EQ(pool->stats().open, 1);
}

TEST(PgPool, DiscardedConnectionIsClosed) {
  const std::string url = PgCluster::shared().create_database();
  auto pool = make_pool(url, 2);
  int pid = 0;
  {
    auto lease = pool->acquire();
    ASSERT_TRUE(lease.is_ok());
    pid = backend_pid(*lease);
    lease->discard();
  }
  EXPECT_EQ(pool->stats().open, 0);
  // The server side goes away too (asynchronously).
  const auto deadline = Clock::now() + 5s;
  std::string alive;
  do {
    alive = query_text(url, "SELECT count(*) FROM pg_stat_activity WHERE pid = " + std::to_string(pid));
  } while (alive != "0" && Clock::now() < deadline);
  EXPECT_EQ(alive, "0");
}

TEST(PgPool, KilledBackendIsDiscardedAndRetried) {
  const std::string url = PgCluster::shared().create_database();
  auto pool = make_pool(url, 2);
  int pid = 0;
  {
    auto lease = pool->acquire();
    ASSERT_TRUE(lease.is_ok());
    pid = backend_pid(*lease);
  }
  query_text(url, "SELECT pg_terminate_backend(" + std::to_string(pid) + ")");

  // pqxx throws on the dead connection; the mapping says: unavailable, lost.
  {
    auto lease = pool->acquire();
    ASSERT_TRUE(lease.is_ok());
    bool lost = false;
    Status s;
    try {
      pqxx::nontransaction tx(lease->conn());
      tx.exec1("SELECT 1");
      FAIL() << "query on a terminated backend succeeded";
    } catch (...) {
      s = internal::status_from_current_exception("probe", &lost);
    }
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.to_string();
    EXPECT_TRUE(lost);
    EXPECT_EQ(s.message().rfind("probe: ", 0), 0u) << s.message();
    lease->discard();
  }
  EXPECT_EQ(pool->stats().open, 0);

  // Through with_connection the dead connection costs nothing: one retry.
  {
    auto lease = pool->acquire();
    ASSERT_TRUE(lease.is_ok());
    pid = backend_pid(*lease);
  }
  query_text(url, "SELECT pg_terminate_backend(" + std::to_string(pid) + ")");
  int runs = 0;
  const Status s = internal::with_connection(*pool, "probe", [&](pqxx::connection& conn) -> Status {
    ++runs;
    pqxx::nontransaction tx(conn);
    tx.exec1("SELECT 1");
    return Status::ok();
  });
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(pool->stats().open, 1);
}

TEST(PgPool, ReconnectsAfterServerRestart) {
  auto pool = make_pool(PgCluster::shared().create_database(), 2, 500ms);
  ASSERT_TRUE(pool->ping().is_ok());
  ASSERT_EQ(pool->stats().open, 1);  // idle, and about to go stale

  {
    testing::ClusterRestartGuard guard;
    PgCluster::shared().stop();
    const auto start = Clock::now();
    const Status down = pool->ping();
    EXPECT_EQ(down.code(), StatusCode::kUnavailable) << down.to_string();
    EXPECT_LT(Clock::now() - start, 4s);  // connect_timeout, not a hang
    EXPECT_EQ(pool->acquire().status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(pool->stats().open, 0);
    EXPECT_EQ(pool->stats().in_use, 0);
  }  // the guard restarts the cluster

  const Status up = pool->ping();
  EXPECT_TRUE(up.is_ok()) << up.to_string();

  // A connection that went stale while idle (restart with no call in
  // between) is replaced transparently.
  {
    testing::ClusterRestartGuard guard;
    PgCluster::shared().stop();
  }
  const Status again = pool->ping();
  EXPECT_TRUE(again.is_ok()) << again.to_string();
  EXPECT_EQ(pool->stats().open, 1);
}

TEST(PgPool, UnreachableServerFailsFast) {
  // A port nothing listens on (the cluster's port while it is down).
  testing::ClusterRestartGuard guard;
  PgCluster::shared().stop();
  for (const std::string& url :
       {PgCluster::shared().url("postgres"),
        "host=127.0.0.1 port=" + std::to_string(PgCluster::shared().port()) + " user=postgres dbname=postgres"}) {
    auto pool = make_pool(url, 1, 200ms);
    const auto start = Clock::now();
    auto lease = pool->acquire();
    EXPECT_EQ(lease.status().code(), StatusCode::kUnavailable) << url;
    EXPECT_LT(Clock::now() - start, 4s);
    EXPECT_EQ(pool->stats().open, 0);
  }
}

TEST(PgPool, ConnectDefaultsAreAddedOnce) {
  using internal::with_connect_defaults;
  EXPECT_EQ(with_connect_defaults("postgresql://u@h:5/db"),
            "postgresql://u@h:5/db?connect_timeout=3&fallback_application_name=tcld");
  EXPECT_EQ(with_connect_defaults("postgresql://u@h/db?sslmode=disable"),
            "postgresql://u@h/db?sslmode=disable&connect_timeout=3&fallback_application_name=tcld");
  EXPECT_EQ(with_connect_defaults("postgres://h/db?connect_timeout=10"),
            "postgres://h/db?connect_timeout=10&fallback_application_name=tcld");
  EXPECT_EQ(with_connect_defaults("host=h dbname=d"),
            "host=h dbname=d connect_timeout=3 fallback_application_name=tcld");
  EXPECT_EQ(with_connect_defaults(""), "connect_timeout=3 fallback_application_name=tcld");
}

TEST(PgPool, OptionsKeepTheUrlAsGivenAndSizeAtLeastOne) {
  PgPoolOptions options;
  options.url = "postgresql://u@h/db";
  options.size = 0;
  PgPool pool(options);
  EXPECT_EQ(pool.options().url, "postgresql://u@h/db");
  EXPECT_EQ(pool.options().size, 1);
  EXPECT_EQ(pool.stats().size, 1);
  EXPECT_EQ(pool.stats().open, 0);
}

}  // namespace
}  // namespace tcl::registry
