// bench/lib/files.h — whole files for what the benches keep between runs
// (bench_continual's cache, bench_onboarding's base checkpoint): read one,
// write one atomically (a temporary beside it, then a rename), so that a
// killed run leaves the old file or none, never a torn one that a rerun
// would take for a finished result.
#pragma once

#include <filesystem>
#include <fstream>
#include <ios>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>

namespace tcl::bench {

// The bytes of `path` into *out; false when it cannot be read.
inline bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return static_cast<bool>(in) || in.eof();
}

// `bytes` as the whole of `path` (written to path + ".tmp", then renamed
// over it); false when it cannot be written.
inline bool write_file_atomic(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

}  // namespace tcl::bench
