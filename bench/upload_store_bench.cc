// bench_upload_store — upload throughput into PostgreSQL through
// registry::UploadStore: add() of every row (COPY into the staging table)
// then commit() (dedup into tasks/programs/measurements), one connection.
//
//   bench_upload_store DATABASE_URL [--rows N] [--records PATH.jsonl[.gz]]
//
// Starts nothing: DATABASE_URL must name a reachable database (migrations
// are applied if missing; a fresh platform is created per run). Rows are
// synthetic with realistic sizes (~700-byte lines, 10 costs, ~22 steps,
// 400 tasks, every program distinct), or the first N lines of a real log
// when --records is given (parsed and hashed before the clock starts).
// Prints rows/s for four uploads of the same rows: measurements of new
// programs (every task, program and measurement is new: the headline), the
// same upload again (all duplicates), the same measurements on a second
// platform (programs known, measurements new), and candidates on the first
// platform (programs known); with the CPU seconds of this process and, when
// the server runs on this machine, of its processes (see server_cpu()).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include "bench/lib/flags.h"
#include "bench/lib/timing.h"
#include "core/line_reader.h"
#include "core/program_id.h"
#include "core/record.h"
#include "core/sha256.h"
#include "registry/migrations.h"
#include "registry/pg_pool.h"
#include "registry/platform_store.h"
#include "registry/upload_store.h"

namespace {

using Clock = std::chrono::steady_clock;
using tcl::bench::seconds_since;
namespace reg = tcl::registry;

// CPU seconds (user + system) of this process, all threads.
double own_cpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// CPU seconds of the server's processes, when it runs on this machine: the
// processes named "postgres" of the cluster listening on the URL's port
// (its postmaster, found by "port=N" on its command line, and the
// postmaster's children), or of every cluster when that is not found.
// `backends` counts client backends only (a client address in their
// title). Wall time on a shared machine says little, CPU time says what a
// change saves.
struct ServerCpu {
  double all = 0, backends = 0;
};
struct ProcStat {
  std::string pid, ppid, title;
  double seconds = 0;
};
std::vector<ProcStat> postgres_processes() {
  std::vector<ProcStat> out;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos ||
        stat.substr(open + 1, close - open - 1) != "postgres") {
      continue;
    }
    // Fields after the command (field 2): 3 state, 4 ppid, ..., 14 utime, 15 stime.
    std::vector<std::string> fields;
    for (std::size_t pos = close + 2; pos < stat.size() && fields.size() < 13;) {
      const std::size_t sp = std::min(stat.find(' ', pos), stat.size());
      fields.push_back(stat.substr(pos, sp - pos));
      pos = sp + 1;
    }
    if (fields.size() < 13) continue;
    ProcStat p;
    p.pid = pid;
    p.ppid = fields[1];
    p.seconds = (std::strtod(fields[11].c_str(), nullptr) + std::strtod(fields[12].c_str(), nullptr)) / tick;
    std::ifstream cmd(entry.path() / "cmdline");
    p.title.assign(std::istreambuf_iterator<char>(cmd), std::istreambuf_iterator<char>());
    out.push_back(std::move(p));
  }
  return out;
}
ServerCpu server_cpu(const std::string& port) {
  const std::vector<ProcStat> procs = postgres_processes();
  std::string postmaster;
  for (const ProcStat& p : procs) {
    if (!port.empty() && p.title.find("port=" + port) != std::string::npos) postmaster = p.pid;
  }
  ServerCpu out;
  for (const ProcStat& p : procs) {
    if (!postmaster.empty() && p.pid != postmaster && p.ppid != postmaster) continue;
    out.all += p.seconds;
    if (p.title.find('(') != std::string::npos || p.title.find("[local]") != std::string::npos)
      out.backends += p.seconds;
  }
  return out;
}

// The port of a postgresql:// URL ("" when it has none).
std::string url_port(const std::string& url) {
  const std::size_t at = url.find('@'), scheme = url.find("://");
  const std::size_t host = at != std::string::npos ? at + 1 : scheme != std::string::npos ? scheme + 3 : 0;
  const std::size_t end = url.find_first_of("/?", host);
  const std::string hostport = url.substr(host, end == std::string::npos ? std::string::npos : end - host);
  const std::size_t colon = hostport.rfind(':');
  return colon == std::string::npos ? "" : hostport.substr(colon + 1);
}

std::string hex64(std::mt19937_64& rng) {
  static const char* kHex = "0123456789abcdef";
  std::string s(64, '0');
  for (int i = 0; i < 64; i += 16) {
    std::uint64_t v = rng();
    for (int j = 0; j < 16; ++j, v >>= 4) s[static_cast<std::size_t>(i + j)] = kHex[v & 15];
  }
  return s;
}

// Synthetic rows shaped like the x86 logs in ../shared/data.
std::vector<reg::UploadRow> synthetic_rows(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> tasks;
  for (int t = 0; t < 400; ++t) {
    tasks.push_back("[\"" + hex64(rng).substr(0, 32) + "\",[1," + std::to_string(16 + t % 64) + ",56,56,64],[3,3," +
                    std::to_string(64 + t) + ",64],[1,56,56,64]]");
  }
  std::uniform_real_distribution<double> cost(1e-6, 1e-3);
  std::vector<reg::UploadRow> rows(n);
  for (std::size_t i = 0; i < n; ++i) {
    reg::UploadRow& r = rows[i];
    r.workload_key = tasks[rng() % tasks.size()];
    std::string steps = "[";
    for (int s = 0; s < 22; ++s) {
      if (s > 0) steps += ',';
      steps += "[\"SP\",2," + std::to_string(s) + "," + std::to_string(rng() % 1024) + ",[" +
               std::to_string(rng() % 64) + "],1]";
    }
    steps += ']';
    r.program_id = hex64(rng);
    r.error_no = (rng() % 100) < 5 ? 4 : 0;
    for (int c = 0; c < 10; ++c) r.costs.push_back(cost(rng));
    r.all_cost = 0.2;
    r.timestamp = 1754209236 + static_cast<std::int64_t>(i);
    r.record = "{\"i\": [[" + r.workload_key +
               ", \"llvm -keys=cpu\", [24, 64, 64, 0, 0, 0, 0, 0], \"\", 2, []], [[], " + steps + "]], \"r\": [[";
    for (int c = 0; c < 10; ++c) {
      if (c > 0) r.record += ", ";
      r.record += std::to_string(r.costs[static_cast<std::size_t>(c)]);
    }
    r.record += "], " + std::to_string(r.error_no) + ", 0.2, " + std::to_string(r.timestamp) + "], \"v\": \"v0.6\"}";
  }
  return rows;
}

tcl::Result<std::vector<reg::UploadRow>> real_rows(const std::string& path, std::size_t n) {
  auto text = tcl::core::read_file_decompressed(path);
  if (!text) return text.status();
  std::vector<reg::UploadRow> rows;
  tcl::core::RecordParser parser;
  tcl::core::Record rec;
  std::string_view rest = *text;
  while (!rest.empty() && rows.size() < n) {
    const std::size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    if (tcl::core::is_skippable_line(line) || !parser.parse(line, &rec)) continue;
    reg::UploadRow r;
    r.workload_key = tcl::core::canonical_workload_key(rec.workload_key);
    r.program_id = tcl::core::program_id(rec);
    r.record = std::string(line);
    r.costs = rec.costs;
    r.error_no = rec.error_no;
    r.all_cost = rec.all_cost;
    r.timestamp = static_cast<std::int64_t>(rec.timestamp);
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string server_port;  // of the database URL, for server_cpu()

// One upload of `rows`; prints its figures. Returns false on error.
bool run_upload(reg::UploadStore& store, std::int64_t platform_id, reg::UploadKind kind,
                const std::vector<reg::UploadRow>& rows, const char* label, const std::string& body_sha256) {
  const auto t0 = Clock::now();
  const double cpu0 = own_cpu();
  const ServerCpu server0 = server_cpu(server_port);
  auto writer = store.begin(platform_id, kind);
  if (!writer) {
    std::fprintf(stderr, "begin: %s\n", writer.status().to_string().c_str());
    return false;
  }
  for (const reg::UploadRow& r : rows) {
    if (tcl::Status s = (*writer)->add(r); !s) {
      std::fprintf(stderr, "add: %s\n", s.to_string().c_str());
      return false;
    }
  }
  const double t_add = seconds_since(t0);
  reg::UploadCounts counts;
  auto done = (*writer)->commit("", body_sha256, [&](std::int64_t, const reg::UploadCounts& c) {
    counts = c;
    return std::string("{}");
  });
  if (!done) {
    std::fprintf(stderr, "commit: %s\n", done.status().to_string().c_str());
    return false;
  }
  const double total = seconds_since(t0);
  const double cpu = own_cpu() - cpu0;
  const ServerCpu server1 = server_cpu(server_port);
  const double server = server1.all - server0.all, backend = server1.backends - server0.backends;
  std::printf(
      "%-26s %8zu rows  add %5.2f s  commit %5.2f s  total %5.2f s  %7.0f rows/s  cpu: client %5.2f s, "
      "server %5.2f s (%4.1f us/row; backend %5.2f s)  (inserted %lld, failed %lld)\n",
      label, rows.size(), t_add, total - t_add, total, static_cast<double>(rows.size()) / total, cpu, server,
      1e6 * server / static_cast<double>(rows.size()), backend, static_cast<long long>(counts.inserted),
      static_cast<long long>(counts.failed));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> urls;
  std::int64_t rows_arg = 100000;
  std::string records_path;
  tcl::bench::Flags flags;
  flags.positional("url", &urls, 1).value("rows", &rows_arg).value("records", &records_path);
  if (!flags.parse(argc, argv)) return 2;
  if (urls.empty()) {
    std::fprintf(stderr, "usage: %s DATABASE_URL [--rows N] [--records PATH.jsonl[.gz]]\n", argv[0]);
    return 2;
  }
  const std::string url = urls[0];
  server_port = url_port(url);
  const auto n = static_cast<std::size_t>(std::max<std::int64_t>(1, rows_arg));

  std::vector<reg::UploadRow> rows;
  if (records_path.empty()) {
    rows = synthetic_rows(n, 42);
  } else {
    auto real = real_rows(records_path, n);
    if (!real) {
      std::fprintf(stderr, "%s\n", real.status().to_string().c_str());
      return 1;
    }
    rows = std::move(*real);
  }
  std::size_t bytes = 0;
  for (const auto& r : rows) bytes += r.record.size();
  std::printf("rows: %zu (%s), mean line %.0f bytes\n", rows.size(),
              records_path.empty() ? "synthetic" : records_path.c_str(),
              static_cast<double>(bytes) / static_cast<double>(std::max<std::size_t>(1, rows.size())));

  reg::PgPoolOptions options;
  options.url = url;
  options.size = 2;
  reg::PgPool pool(options);
  if (auto m = reg::apply_migrations(pool, reg::embedded_migrations()); !m) {
    std::fprintf(stderr, "migrations: %s\n", m.status().to_string().c_str());
    return 1;
  }
  reg::PlatformStore platforms(pool);
  const std::string tag = "bench-" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  std::int64_t platform_ids[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    reg::NewPlatform p;
    p.name = tag + "-" + std::to_string(i);
    p.target = "llvm -keys=cpu";
    p.hardware_params = {24, 64, 64, 0, 0, 0, 0, 0};
    auto platform = platforms.create(p);
    if (!platform) {
      std::fprintf(stderr, "platform: %s\n", platform.status().to_string().c_str());
      return 1;
    }
    platform_ids[i] = platform->id;
  }

  reg::UploadStore store(pool);
  // Distinct body hashes, so no run is taken for a retry of another.
  using K = reg::UploadKind;
  if (!run_upload(store, platform_ids[0], K::kMeasurements, rows, "measurements, new programs",
                  tcl::sha256_hex(tag + "/1")) ||
      !run_upload(store, platform_ids[0], K::kMeasurements, rows, "measurements, all dup",
                  tcl::sha256_hex(tag + "/2")) ||
      !run_upload(store, platform_ids[1], K::kMeasurements, rows, "measurements, known progs",
                  tcl::sha256_hex(tag + "/3")) ||
      !run_upload(store, platform_ids[0], K::kCandidates, rows, "candidates, known progs",
                  tcl::sha256_hex(tag + "/4"))) {
    return 1;
  }
  return 0;
}
