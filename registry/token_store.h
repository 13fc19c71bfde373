// registry/token_store.h — API bearer tokens (table `api_tokens`).
//
// A token is "tcl_" + 64 random hex characters. Only its SHA-256 is stored;
// the plaintext is returned once by create() and never again.
// Thread-safe. Does not own `pool`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "registry/pg_pool.h"

namespace tcl::registry {

// Ordered: a higher scope includes the lower ones. Stored as text in SQL.
enum class Scope { kRead = 1, kWrite = 2, kAdmin = 3 };
std::string_view scope_name(Scope s);  // "read" | "write" | "admin"
std::optional<Scope> parse_scope(std::string_view s);

struct TokenInfo {
  std::int64_t id = 0;
  std::string name;
  Scope scope = Scope::kRead;
};

struct CreatedToken {
  TokenInfo info;
  std::string plaintext;  // shown once
};

class TokenStore {
 public:
  explicit TokenStore(PgPool& pool) : pool_(pool) {}
  // kAlreadyExists when an unrevoked token has this name.
  Result<CreatedToken> create(const std::string& name, Scope scope);
  // kNotFound when no unrevoked token has this name.
  Status revoke(const std::string& name);
  // kUnauthenticated when unknown or revoked; kUnavailable when the DB is down.
  Result<TokenInfo> lookup(std::string_view plaintext);
  // True when at least one unrevoked admin token exists.
  Result<bool> has_admin();

 private:
  PgPool& pool_;
};

}  // namespace tcl::registry
