// api/auth.h — bearer tokens and scopes.
//
// Routes declare an Access level; a token's Scope must be at least that
// (admin ⊃ write ⊃ read). TokenCache wraps the database lookup so a busy
// client costs one query per `ttl` instead of one per request; a revoked
// token therefore stops working within `ttl` (default 5 s) on every replica.
// Unknown tokens are cached too (for a shorter time) so a client hammering a
// bad token cannot hammer the database.
//
// Stale on error: when the lookup fails with kUnavailable (the database is
// down), a token whose last answer was good keeps that answer for up to
// `stale_for` past its ttl (default 5 min), so routes served from memory
// (predict) outlive a short outage. Only a good answer is kept: an unknown or
// revoked token, or one never seen, is never made valid by it. The price: a
// token revoked during an outage works until ttl + stale_for after its last
// check. While stale, the database is asked again at most once per
// `negative_ttl` per token.
// Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "api/router.h"
#include "core/mutex.h"
#include "core/status.h"
#include "registry/token_store.h"

namespace tcl::api {

// "Bearer abc" (scheme case-insensitive) → "abc"; nullopt otherwise.
std::optional<std::string_view> parse_bearer(std::string_view authorization);
bool scope_allows(Access needed, registry::Scope have);
std::string_view access_name(Access a);

using TokenLookup = std::function<Result<registry::TokenInfo>(std::string_view token)>;

class TokenCache {
 public:
  using Clock = std::chrono::steady_clock;
  TokenCache(TokenLookup lookup, std::chrono::milliseconds ttl = std::chrono::seconds(5),
             std::chrono::milliseconds negative_ttl = std::chrono::seconds(1),
             std::function<Clock::time_point()> now = Clock::now,
             std::chrono::milliseconds stale_for = std::chrono::minutes(5));
  // kUnauthenticated for unknown tokens, kUnavailable (never cached) when the
  // lookup itself failed and no good answer within stale_for is kept.
  Result<registry::TokenInfo> authenticate(std::string_view token) EXCLUDES(mu_);

 private:
  struct Entry {
    std::optional<registry::TokenInfo> info;  // empty = known bad
    Clock::time_point expires;                // ask the database again from here on
    Clock::time_point stale_until;            // good answers: served on kUnavailable until here
  };
  const TokenLookup lookup_;
  const std::chrono::milliseconds ttl_, negative_ttl_, stale_for_;
  const std::function<Clock::time_point()> now_;
  core::Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ GUARDED_BY(mu_);  // by sha256 of the token
};

}  // namespace tcl::api
