#include "api/auth.h"

#include <gtest/gtest.h>

namespace tcl::api {
namespace {

using registry::Scope;
using registry::TokenInfo;

TEST(AuthTest, ParsesBearerHeader) {
  EXPECT_EQ(parse_bearer("Bearer abc").value_or(""), "abc");
  EXPECT_EQ(parse_bearer("bearer abc").value_or(""), "abc");
  EXPECT_EQ(parse_bearer("BEARER  abc ").value_or(""), "abc");
  EXPECT_FALSE(parse_bearer("Basic abc"));
  EXPECT_FALSE(parse_bearer("Bearer"));
  EXPECT_FALSE(parse_bearer("Bearer "));
  EXPECT_FALSE(parse_bearer("Bearerabc"));
  EXPECT_FALSE(parse_bearer("Bearer a b"));
}

TEST(AuthTest, ScopesAreOrdered) {
  EXPECT_TRUE(scope_allows(Access::kOpen, Scope::kRead));
  EXPECT_TRUE(scope_allows(Access::kRead, Scope::kRead));
  EXPECT_FALSE(scope_allows(Access::kWrite, Scope::kRead));
  EXPECT_TRUE(scope_allows(Access::kWrite, Scope::kWrite));
  EXPECT_FALSE(scope_allows(Access::kAdmin, Scope::kWrite));
  EXPECT_TRUE(scope_allows(Access::kRead, Scope::kAdmin));
  EXPECT_TRUE(scope_allows(Access::kAdmin, Scope::kAdmin));
}

struct FakeClock {
  TokenCache::Clock::time_point now{};
};

TEST(AuthTest, CacheAsksTheStoreOncePerTtl) {
  int lookups = 0;
  FakeClock clock;
  TokenCache cache(
      [&](std::string_view t) -> Result<TokenInfo> {
        ++lookups;
        if (t == "good") return TokenInfo{1, "ci", Scope::kWrite};
        return Status::unauthenticated("unknown token");
      },
      std::chrono::seconds(5), std::chrono::seconds(1), [&] { return clock.now; });

  for (int i = 0; i < 3; ++i) {
    auto who = cache.authenticate("good");
    ASSERT_TRUE(who);
    EXPECT_EQ(who->name, "ci");
  }
  EXPECT_EQ(lookups, 1);
  clock.now += std::chrono::seconds(6);
  ASSERT_TRUE(cache.authenticate("good"));
  EXPECT_EQ(lookups, 2);

  // Bad tokens are cached for the shorter negative TTL.
  EXPECT_EQ(cache.authenticate("bad").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(cache.authenticate("bad").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(lookups, 3);
  clock.now += std::chrono::milliseconds(1500);
  EXPECT_FALSE(cache.authenticate("bad"));
  EXPECT_EQ(lookups, 4);
}

TEST(AuthTest, CacheNeverKeepsAnOutage) {
  int lookups = 0;
  bool db_up = false;
  TokenCache cache([&](std::string_view) -> Result<TokenInfo> {
    ++lookups;
    if (!db_up) return Status::unavailable("database down");
    return TokenInfo{1, "ci", Scope::kRead};
  });
  EXPECT_EQ(cache.authenticate("t").status().code(), StatusCode::kUnavailable);
  db_up = true;
  EXPECT_TRUE(cache.authenticate("t"));
  EXPECT_EQ(lookups, 2);
}

// Issue 45 #12: a known good token keeps its last answer through an outage
// (for stale_for past its ttl); a bad or unseen token is never made valid.
TEST(AuthTest, AKnownTokenOutlivesAnOutageForABoundedTime) {
  int lookups = 0;
  bool db_up = true;
  bool revoked = false;
  FakeClock clock;
  TokenCache cache(
      [&](std::string_view t) -> Result<TokenInfo> {
        ++lookups;
        if (!db_up) return Status::unavailable("database down");
        if (t == "good" && !revoked) return TokenInfo{1, "ci", Scope::kRead};
        return Status::unauthenticated("unknown token");
      },
      std::chrono::seconds(5), std::chrono::seconds(1), [&] { return clock.now; }, std::chrono::minutes(5));
  ASSERT_TRUE(cache.authenticate("good"));
  EXPECT_EQ(cache.authenticate("bad").status().code(), StatusCode::kUnauthenticated);

  db_up = false;
  clock.now += std::chrono::seconds(10);  // both entries expired; the lookup fails
  auto stale = cache.authenticate("good");
  ASSERT_TRUE(stale) << stale.status().to_string();
  EXPECT_EQ(stale->name, "ci");
  EXPECT_EQ(cache.authenticate("bad").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(cache.authenticate("never-seen").status().code(), StatusCode::kUnavailable);
  const int during = lookups;
  EXPECT_TRUE(cache.authenticate("good"));
  EXPECT_EQ(lookups, during) << "a stale answer asks the database again only after negative_ttl";
  clock.now += std::chrono::seconds(2);
  EXPECT_TRUE(cache.authenticate("good"));
  EXPECT_EQ(lookups, during + 1);

  // Past ttl + stale_for since the last good answer: the outage shows.
  clock.now += std::chrono::minutes(5);
  EXPECT_EQ(cache.authenticate("good").status().code(), StatusCode::kUnavailable);

  // Back up: the database decides again; a revoked token is refused, and the
  // next outage does not bring it back.
  db_up = true;
  revoked = true;
  EXPECT_EQ(cache.authenticate("good").status().code(), StatusCode::kUnauthenticated);
  db_up = false;
  clock.now += std::chrono::seconds(10);
  EXPECT_EQ(cache.authenticate("good").status().code(), StatusCode::kUnavailable);
}

TEST(AuthTest, OtherLookupErrorsAreNeverAnsweredStale) {
  bool fail = false;
  FakeClock clock;
  TokenCache cache(
      [&](std::string_view) -> Result<TokenInfo> {
        if (fail) return Status::internal("bug");
        return TokenInfo{1, "ci", Scope::kRead};
      },
      std::chrono::seconds(5), std::chrono::seconds(1), [&] { return clock.now; });
  ASSERT_TRUE(cache.authenticate("t"));
  fail = true;
  clock.now += std::chrono::seconds(6);
  EXPECT_EQ(cache.authenticate("t").status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace tcl::api
