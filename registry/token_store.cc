#include "registry/token_store.h"

#include <pqxx/transaction>

#include <algorithm>
#include <string>

#include "core/sha256.h"
#include "registry/pg_pool_internal.h"

namespace tcl::registry {
namespace {

constexpr std::string_view kTokenPrefix = "tcl_";
constexpr std::size_t kTokenRandomBytes = 32;  // 64 hex characters

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// "tcl_" + 64 lower-case hex characters; anything else cannot be a token.
bool well_formed(std::string_view token) {
  if (token.size() != kTokenPrefix.size() + 2 * kTokenRandomBytes) return false;
  if (token.substr(0, kTokenPrefix.size()) != kTokenPrefix) return false;
  const std::string_view hex = token.substr(kTokenPrefix.size());
  return std::all_of(hex.begin(), hex.end(), is_lower_hex);
}

Result<TokenInfo> row_to_info(const pqxx::row& row) {
  TokenInfo info;
  info.id = row[0].as<std::int64_t>();
  info.name = row[1].as<std::string>();
  const auto scope = parse_scope(row[2].as<std::string>());
  if (!scope) return Status::internal("token '" + info.name + "' has unknown scope '" + row[2].as<std::string>() + "'");
  info.scope = *scope;
  return info;
}

}  // namespace

std::string_view scope_name(Scope s) {
  switch (s) {
    case Scope::kRead: return "read";
    case Scope::kWrite: return "write";
    case Scope::kAdmin: return "admin";
  }
  return "read";
}

std::optional<Scope> parse_scope(std::string_view s) {
  if (s == "read") return Scope::kRead;
  if (s == "write") return Scope::kWrite;
  if (s == "admin") return Scope::kAdmin;
  return std::nullopt;
}

Result<CreatedToken> TokenStore::create(const std::string& name, Scope scope) {
  if (name.empty() || name.size() > 128) return Status::invalid_argument("token name must be 1 to 128 bytes");
  const std::string what = "creating token '" + name + "'";
  // Generated outside the retried body so a retry stores the same token.
  std::string plaintext;
  try {
    plaintext = std::string(kTokenPrefix) + random_hex(kTokenRandomBytes);
  } catch (const std::exception& e) {
    return Status::internal(what + ": " + e.what());
  }
  const std::string hash = sha256_hex(plaintext);
  return internal::with_transaction(pool_, what, [&](pqxx::work& tx) -> Result<CreatedToken> {
    try {
      const pqxx::row row = tx.exec_params1(
          "INSERT INTO api_tokens (name, scope, token_sha256) VALUES ($1, $2, $3) RETURNING id, name, scope", name,
          std::string(scope_name(scope)), hash);
      auto info = row_to_info(row);
      if (!info) return info.status();
      return CreatedToken{std::move(*info), plaintext};
    } catch (const pqxx::unique_violation&) {
      return Status::already_exists("an unrevoked token named '" + name + "' already exists");
    }
  });
}

Status TokenStore::revoke(const std::string& name) {
  const std::string what = "revoking token '" + name + "'";
  return internal::with_transaction(pool_, what, [&](pqxx::work& tx) -> Status {
    const pqxx::result r =
        tx.exec_params("UPDATE api_tokens SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL", name);
    if (r.affected_rows() == 0) return Status::not_found("no unrevoked token named '" + name + "'");
    return Status::ok();
  });
}

Result<TokenInfo> TokenStore::lookup(std::string_view plaintext) {
  // A malformed token is rejected without a query (and is never logged).
  if (!well_formed(plaintext)) return Status::unauthenticated("invalid token");
  const std::string hash = sha256_hex(plaintext);
  return internal::with_transaction(pool_, "checking a token", [&](pqxx::work& tx) -> Result<TokenInfo> {
    const pqxx::result r =
        tx.exec_params("SELECT id, name, scope FROM api_tokens WHERE token_sha256 = $1 AND revoked_at IS NULL", hash);
    if (r.empty()) return Status::unauthenticated("invalid or revoked token");
    return row_to_info(r[0]);
  });
}

Result<bool> TokenStore::has_admin() {
  return internal::with_transaction(pool_, "looking for an admin token", [&](pqxx::work& tx) -> Result<bool> {
    return tx.exec1("SELECT EXISTS (SELECT 1 FROM api_tokens WHERE scope = 'admin' AND revoked_at IS NULL)")[0]
        .as<bool>();
  });
}

}  // namespace tcl::registry
