#include "api/auth.h"

#include <algorithm>
#include <cctype>

#include "core/sha256.h"

namespace tcl::api {

std::optional<std::string_view> parse_bearer(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() + 1) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return std::nullopt;
  }
  if (authorization[kScheme.size()] != ' ') return std::nullopt;
  std::string_view token = authorization.substr(kScheme.size() + 1);
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  if (token.empty() || token.find(' ') != std::string_view::npos) return std::nullopt;
  return token;
}

bool scope_allows(Access needed, registry::Scope have) {
  switch (needed) {
    case Access::kOpen: return true;
    case Access::kRead: return have >= registry::Scope::kRead;
    case Access::kWrite: return have >= registry::Scope::kWrite;
    case Access::kAdmin: return have >= registry::Scope::kAdmin;
  }
  return false;
}

std::string_view access_name(Access a) {
  switch (a) {
    case Access::kOpen: return "none";
    case Access::kRead: return "read";
    case Access::kWrite: return "write";
    case Access::kAdmin: return "admin";
  }
  return "?";
}

TokenCache::TokenCache(TokenLookup lookup, std::chrono::milliseconds ttl, std::chrono::milliseconds negative_ttl,
                       std::function<Clock::time_point()> now, std::chrono::milliseconds stale_for)
    : lookup_(std::move(lookup)), ttl_(ttl), negative_ttl_(negative_ttl), stale_for_(stale_for), now_(std::move(now)) {}

Result<registry::TokenInfo> TokenCache::authenticate(std::string_view token) {
  const std::string key = sha256_hex(token);
  const auto t = now_();
  {
    core::MutexLock lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.expires > t) {
      if (it->second.info) return *it->second.info;
      return Status::unauthenticated("unknown or revoked token");
    }
  }
  auto found = lookup_(token);
  core::MutexLock lock(mu_);
  if (!found && found.status().code() != StatusCode::kUnauthenticated) {
    if (found.status().code() != StatusCode::kUnavailable) return found.status();
    auto it = entries_.find(key);
    if (it == entries_.end() || !it->second.info || it->second.stale_until <= t) return found.status();
    // The last good answer, within its stale bound; the database is asked
    // again after negative_ttl rather than on every request of the outage.
    it->second.expires = std::min(t + negative_ttl_, it->second.stale_until);
    return *it->second.info;
  }
  if (entries_.size() > 10000) entries_.clear();  // bound memory against random-token floods
  if (found) {
    entries_[key] = Entry{*found, t + ttl_, t + ttl_ + stale_for_};
    return *found;
  }
  entries_[key] = Entry{std::nullopt, t + negative_ttl_, t};
  return found.status();
}

}  // namespace tcl::api
