// tools/upload.h — `tclctl upload`: sends record files to tcld in bounded
// batches. Each batch carries an Idempotency-Key derived from its content, so
// running the same command again after an interruption re-sends only what is
// missing (batches already stored answer with their first report).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tools/api_client.h"

namespace tcl::tools {

struct UploadCommand {
  std::string platform;
  std::string kind = "measurements";    // or "candidates"
  std::vector<std::string> files;       // .jsonl or .jsonl.gz
  std::size_t batch_lines = 50000;      // lines per HTTP request
  std::size_t batch_bytes = 64u << 20;  // and at most this many bytes
  bool gzip = false;                    // compress each batch
  bool quiet = false;                   // no progress output
};

struct UploadTotals {
  long long lines = 0, accepted = 0, failed = 0, duplicates = 0, rejected = 0, batches = 0, replayed = 0;
};

// Returns 0 on success, 1 when a batch could not be stored (the message says
// which), 2 on bad arguments. Rejected lines are reported, not fatal.
int run_upload_command(ApiClient& api, const UploadCommand& cmd, UploadTotals* totals);

}  // namespace tcl::tools
