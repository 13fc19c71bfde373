// registry/upload_store.cc — an upload from begin() to commit(), and the
// store's two agreements with the schema: the key of the upload lock
// (migrations/0007, tests/registry/registry_test_env.h) and the bytes of a
// measurement's dedup key (SQL tcl_measurement_dedup_key, migrations/0004).
// How the rows are written is upload_writer_internal.h's; the parts:
//   upload_writer.cc       the caller's thread and the writer's thread
//   upload_staging.cc      COPY into a staging table while the body streams
//   upload_direct.cc       COPY straight into the tables at commit
//   upload_copy.cc         binary COPY through libpq, array literals
//   upload_counts.cc       the platform's counts
//   upload_idempotency.cc  earlier uploads by key or body hash; the uploads row
//   upload_reads.cc        for_each_record
#include <pqxx/pqxx>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "core/sha256.h"
#include "registry/copy_codec.h"
#include "registry/pg_pool_internal.h"
#include "registry/upload_writer_internal.h"

namespace tcl::registry {
namespace {

// The upload lock: a transaction-level advisory lock in the two-int key
// space, apart from the one-bigint key of the migrations lock.
constexpr std::int32_t kUploadLockClass = 0x54434c55;  // "TCLU"
constexpr std::int32_t kUploadLockObject = 1;

}  // namespace

std::string_view upload_kind_name(UploadKind k) {
  switch (k) {
    case UploadKind::kMeasurements: return "measurements";
    case UploadKind::kCandidates: return "candidates";
  }
  return "measurements";
}

using internal::DedupKey;

DedupKey internal::measurement_dedup_key(std::int64_t platform_id, std::string_view program_id, std::int64_t timestamp,
                                         std::span<const double> costs, std::string& buf, Sha256Stream& sha256) {
  buf.clear();
  put_be64(buf, static_cast<std::uint64_t>(platform_id));
  buf.append(program_id);
  buf.push_back('\0');
  put_be64(buf, static_cast<std::uint64_t>(timestamp));
  for (double c : costs) put_be64(buf, double_bits(c + 0.0));
  const Sha256Digest d = sha256.digest(buf);
  DedupKey key;
  std::memcpy(key.data(), d.data(), key.size());
  return key;
}

Result<CommittedUpload> UploadWriter::commit(
    std::string_view idempotency_key, std::string_view body_sha256,
    const std::function<std::string(std::int64_t upload_id, const UploadCounts&)>& make_report) {
  Impl& m = *impl_;
  if (Status s = m.usable("commit"); !s) return s;
  if (Status s = m.drain(); !s) return s;  // from here on, this thread writes
  try {
    pqxx::work& tx = *m.tx;
    if (!m.locked) {
      tx.exec_params("SELECT pg_advisory_xact_lock($1, $2)", kUploadLockClass, kUploadLockObject);
      m.locked = true;
    }

    // A concurrent retry may have committed while we streamed.
    auto previous = internal::find_previous_in(tx, m.platform_id, m.kind, idempotency_key, body_sha256);
    if (!previous || previous->has_value()) {
      tx.abort();
      m.finished = true;
      if (!previous) return m.record(previous.status());
      return std::move(**previous);
    }

    if (Status s = m.insert_upload(idempotency_key, body_sha256); !s) return m.record(std::move(s));
    m.move_staged();
    m.write_direct(*m.filling);
    m.filling->clear();
    m.add_to_counts();

    UploadCounts counts;
    counts.staged = m.staged;
    counts.inserted = m.inserted;
    counts.failed = m.failed;
    counts.duplicates = counts.staged - counts.inserted;
    // Returned as stored (jsonb's rendering), so a replay answers byte for
    // byte what the first commit answered.
    std::string stored = m.store_report(make_report(m.upload_id, counts));
    tx.commit();
    m.finished = true;
    return CommittedUpload{m.upload_id, std::move(stored), false};
  } catch (...) {
    return m.record(m.fail("committing " + m.what()));
  }
}

Result<std::unique_ptr<UploadWriter>> UploadStore::begin(std::int64_t platform_id, UploadKind kind) {
  const std::string what =
      "starting " + std::string(upload_kind_name(kind)) + " upload for platform " + std::to_string(platform_id);
  // Like with_connection(): an idle connection found dead (the server
  // restarted) is replaced once; nothing was streamed yet, so that is safe.
  for (int attempt = 0;; ++attempt) {
    auto lease = pool_.acquire();
    if (!lease) return lease.status().with_context(what);
    auto impl = std::make_unique<UploadWriter::Impl>(std::move(*lease), platform_id, kind);
    try {
      impl->tx = std::make_unique<pqxx::work>(impl->lease.conn());
      // The move statements' per-row probes make the planner's cost
      // estimates huge, which would JIT-compile them (~150 ms each) for no gain.
      // tcl.platform_counts: this transaction keeps platform_counts itself
      // (add_to_counts), so migrations/0007's trigger does not recount.
      impl->tx->exec0("SET LOCAL jit = off; SET LOCAL tcl.platform_counts = 'maintained'");
      // The id is reserved now so that rows can carry it before the uploads
      // row exists (commit() inserts it); an upload rolled back leaves a gap.
      impl->upload_id =
          impl->tx->exec1("SELECT nextval(pg_get_serial_sequence('uploads', 'id'))")[0].as<std::int64_t>();
      return std::unique_ptr<UploadWriter>(new UploadWriter(std::move(impl)));
    } catch (...) {
      Status s = impl->fail(what);
      impl.reset();
      if (s.code() != StatusCode::kUnavailable || attempt > 0) return s;
    }
  }
}

}  // namespace tcl::registry
