// registry/upload_reads.cc — the stored records read back
// (UploadStore::for_each_record): a server-side cursor in one read
// transaction, fetched in batches so memory stays bounded.
#include <pqxx/pqxx>

#include <cstdint>
#include <string>

#include "registry/pg_pool_internal.h"
#include "registry/upload_store.h"

namespace tcl::registry {

Status UploadStore::for_each_record(std::int64_t platform_id, UploadKind kind,
                                    const std::function<bool(const StoredRecord&)>& sink, int batch) {
  if (batch < 1) return Status::invalid_argument("for_each_record: batch must be at least 1");
  const std::string table(upload_kind_name(kind));
  const std::string what = "reading " + table + " of platform " + std::to_string(platform_id);
  // platform_id is an integer, so it is spelled into DECLARE (which takes no
  // bind parameters) safely.
  const std::string declare = "DECLARE tcl_records NO SCROLL CURSOR FOR SELECT program_id, record FROM " + table +
                              " WHERE platform_id = " + std::to_string(platform_id) + " ORDER BY id";
  const std::string fetch = "FETCH FORWARD " + std::to_string(batch) + " FROM tcl_records";

  std::int64_t delivered = 0;
  return internal::with_connection(
      pool_, what,
      [&](pqxx::connection& conn) -> Status {
        pqxx::read_transaction tx(conn);
        tx.exec0(declare);
        StoredRecord rec;
        for (;;) {
          const pqxx::result r = tx.exec(fetch);
          for (const pqxx::row& row : r) {
            rec.program_id.assign(row[0].c_str(), row[0].size());
            rec.record.assign(row[1].c_str(), row[1].size());
            ++delivered;
            if (!sink(rec)) return Status::ok();  // the read-only transaction rolls back
          }
          if (r.size() < static_cast<std::size_t>(batch)) break;
        }
        tx.commit();
        return Status::ok();
      },
      // Once the sink saw rows, a retry would repeat them: report instead.
      [&] { return delivered == 0; });
}

}  // namespace tcl::registry
