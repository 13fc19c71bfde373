// registry/upload_idempotency.cc — an upload recorded with its
// Idempotency-Key and body hash, so that a retry gets the first answer back:
// the look-up of an earlier upload (find_previous, and again in commit()
// under the upload lock), the uploads row and its report, stored as jsonb
// renders it so a replay answers byte for byte what the first commit did.
#include <pqxx/pqxx>

#include <cstdint>
#include <optional>
#include <string>

#include "registry/pg_pool_internal.h"
#include "registry/upload_writer_internal.h"

namespace tcl::registry {

Result<std::optional<CommittedUpload>> internal::find_previous_in(pqxx::transaction_base& tx, std::int64_t platform_id,
                                                                  UploadKind kind, std::string_view key,
                                                                  std::string_view body_sha256) {
  const std::string kind_name(upload_kind_name(kind));
  if (!key.empty()) {
    // The key is unique per platform (schema): a hit of the other kind, or
    // with another body, is a reused key, not a retry. An empty hash (the
    // body is not read yet) compares the key only.
    const pqxx::result r = tx.exec_params(
        "SELECT id, kind, body_sha256, report::text FROM uploads WHERE platform_id = $1 AND idempotency_key = $2",
        platform_id, std::string(key));
    if (r.empty()) return std::optional<CommittedUpload>();
    const std::int64_t id = r[0][0].as<std::int64_t>();
    const std::string used_by = "Idempotency-Key '" + std::string(key) + "' was already used by upload " +
                                std::to_string(id) + " (" + r[0][1].as<std::string>() + ")";
    if (r[0][1].as<std::string>() != kind_name) return Status::failed_precondition(used_by);
    if (!body_sha256.empty() && r[0][2].as<std::string>() != body_sha256) {
      return Status::failed_precondition(used_by + " with a different body");
    }
    return std::optional<CommittedUpload>(CommittedUpload{id, r[0][3].as<std::string>(), true});
  }
  const pqxx::result r = tx.exec_params(
      "SELECT id, report::text FROM uploads WHERE platform_id = $1 AND kind = $2 AND body_sha256 = $3 "
      "ORDER BY id LIMIT 1",
      platform_id, kind_name, std::string(body_sha256));
  if (r.empty()) return std::optional<CommittedUpload>();
  return std::optional<CommittedUpload>(CommittedUpload{r[0][0].as<std::int64_t>(), r[0][1].as<std::string>(), true});
}

Result<std::optional<CommittedUpload>> UploadStore::find_previous(std::int64_t platform_id, UploadKind kind,
                                                                  std::string_view idempotency_key,
                                                                  std::string_view body_sha256) {
  const std::string what = "looking up earlier " + std::string(upload_kind_name(kind)) + " uploads";
  return internal::with_connection(pool_, what, [&](pqxx::connection& conn) -> Result<std::optional<CommittedUpload>> {
    pqxx::read_transaction tx(conn);
    return internal::find_previous_in(tx, platform_id, kind, idempotency_key, body_sha256);
  });
}

Status UploadWriter::Impl::insert_upload(std::string_view idempotency_key, std::string_view body_sha256) {
  try {
    tx->exec_params0(
        "INSERT INTO uploads (id, platform_id, kind, idempotency_key, body_sha256) OVERRIDING SYSTEM VALUE "
        "VALUES ($1, $2, $3, NULLIF($4, ''), $5)",
        upload_id, platform_id, std::string(upload_kind_name(kind)), std::string(idempotency_key),
        std::string(body_sha256));
  } catch (const pqxx::unique_violation&) {
    // The lock makes find_previous_in() before it see every committed
    // upload, so this is not expected; kept as the schema's last word.
    return Status::failed_precondition("Idempotency-Key '" + std::string(idempotency_key) +
                                       "' was just used by another upload of this platform");
  }
  return Status::ok();
}

std::string UploadWriter::Impl::store_report(const std::string& report) {
  return tx
      ->exec_params1("UPDATE uploads SET report = $2::jsonb WHERE id = $1 RETURNING report::text", upload_id, report)[0]
      .as<std::string>();
}

}  // namespace tcl::registry
