#include "tools/upload.h"

#include <unistd.h>

#include <boost/json.hpp>

#include <chrono>
#include <cstdio>
#include <thread>

#include "core/byte_stream.h"
#include "core/line_reader.h"
#include "core/record.h"
#include "core/sha256.h"

namespace tcl::tools {
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

class Progress {
 public:
  explicit Progress(bool quiet) : quiet_(quiet), tty_(::isatty(2) != 0), start_(Clock::now()) {}
  void show(const std::string& file, const UploadTotals& t, double bytes, bool final) {
    if (quiet_) return;
    const double secs = std::chrono::duration<double>(Clock::now() - start_).count();
    const double rate = secs > 0 ? static_cast<double>(t.lines) / secs : 0;
    std::fprintf(
        stderr,
        "%s%s: %lld records, %.1f MB, %.0f records/s — accepted %lld (failed %lld), duplicates %lld, rejected %lld%s",
        tty_ ? "\r\033[K" : "", file.c_str(), t.lines, bytes / 1e6, rate, t.accepted, t.failed, t.duplicates,
        t.rejected, (tty_ && !final) ? "" : "\n");
    std::fflush(stderr);
  }

 private:
  bool quiet_, tty_;
  Clock::time_point start_;
};

// Sends one batch, retrying transport failures (the key makes that safe).
Status send_batch(ApiClient& api, const UploadCommand& cmd, const std::string& body, UploadTotals* t) {
  const std::string target = "/v1/platforms/" + cmd.platform + "/" + cmd.kind;
  std::map<std::string, std::string> headers = {{"Content-Type", "application/x-ndjson"},
                                                {"Idempotency-Key", "tclctl-" + sha256_hex(cmd.kind + "\n" + body)}};
  std::string payload = body;
  if (cmd.gzip) {
    payload = core::gzip_compress(body);
    headers["Content-Encoding"] = "gzip";
  }
  for (int attempt = 1;; ++attempt) {
    auto r = api.call("POST", target, payload, headers);
    if (!r) {
      if (attempt >= 4) return r.status();
      std::this_thread::sleep_for(std::chrono::seconds(attempt));
      continue;
    }
    if (r->status == 503 && attempt < 4) {
      std::this_thread::sleep_for(std::chrono::seconds(attempt));
      continue;
    }
    if (r->status != 200 && r->status != 201) return Status::failed_precondition(r->error_text());
    const json::value rep = r->json();
    t->accepted += rep.at("accepted").to_number<long long>();
    t->failed += rep.at("failed").to_number<long long>();
    t->duplicates += rep.at("duplicates").to_number<long long>();
    t->rejected += rep.at("rejected_count").to_number<long long>();
    t->replayed += r->status == 200 ? 1 : 0;
    ++t->batches;
    int shown = 0;
    for (const auto& rej : rep.at("rejected").as_array()) {
      if (++shown > 3) break;
      std::fprintf(stderr, "\n  rejected line %lld of this batch: %s", rej.at("line").to_number<long long>(),
                   std::string(rej.at("reason").as_string()).c_str());
    }
    if (shown > 0) std::fputc('\n', stderr);  // what follows (progress or a message) starts on its own line
    return Status::ok();
  }
}

}  // namespace

int run_upload_command(ApiClient& api, const UploadCommand& cmd, UploadTotals* totals) {
  if (cmd.platform.empty() || cmd.files.empty()) {
    std::fprintf(stderr, "tclctl upload: needs --platform and at least one file\n");
    return 2;
  }
  if (cmd.kind != "measurements" && cmd.kind != "candidates") {
    std::fprintf(stderr, "tclctl upload: --kind must be measurements or candidates\n");
    return 2;
  }
  Progress progress(cmd.quiet);
  double bytes = 0;
  for (const std::string& file : cmd.files) {
    auto reader = core::LineReader::open(file);
    if (!reader) {
      std::fprintf(stderr, "tclctl upload: %s\n", reader.status().message().c_str());
      return 1;
    }
    std::string batch;
    std::size_t batch_count = 0;
    bool batch_has_record = false;  // tcld refuses a body of only blank and comment lines (400)
    auto flush = [&]() -> bool {
      if (batch_count == 0) return true;
      Status s = batch_has_record ? send_batch(api, cmd, batch, totals) : Status::ok();
      if (!s) {
        std::fprintf(stderr, "\ntclctl upload: %s: batch ending at line %llu failed: %s\n", file.c_str(),
                     static_cast<unsigned long long>((*reader)->line_number()), s.message().c_str());
        return false;
      }
      totals->lines += static_cast<long long>(batch_count);
      bytes += static_cast<double>(batch.size());
      progress.show(file, *totals, bytes, false);
      batch.clear();
      batch_count = 0;
      batch_has_record = false;
      return true;
    };
    std::string_view line;
    while ((*reader)->next(&line)) {
      batch_has_record = batch_has_record || !core::is_skippable_line(line);
      batch.append(line);
      batch.push_back('\n');
      if (++batch_count >= cmd.batch_lines || batch.size() >= cmd.batch_bytes) {
        if (!flush()) return 1;
      }
    }
    if (!(*reader)->status().is_ok()) {
      std::fprintf(stderr, "\ntclctl upload: %s: %s\n", file.c_str(), (*reader)->status().message().c_str());
      return 1;
    }
    if (!flush()) return 1;
    progress.show(file, *totals, bytes, true);
  }
  return 0;
}

}  // namespace tcl::tools
