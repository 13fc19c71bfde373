// core/files.h — whole files: read one, write one atomically (a temporary
// beside it, then a rename), so that a killed process leaves the old file or
// none, never a torn one that a rerun would take for a finished result
// (bench_continual's cache, bench_onboarding's base, tcl-measure's cubins).
//
// Thread-safety: free functions; two writers of one path race on its
// temporary (path + ".tmp"): callers write a path from one thread at a time.
#pragma once

#include <string>
#include <string_view>

namespace tcl::core {

// The bytes of `path` into *out; false when it cannot be read.
bool read_file(const std::string& path, std::string* out);

// `bytes` as the whole of `path` (written to path + ".tmp", then renamed
// over it); false when it cannot be written (the old file, if any, stays).
bool write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace tcl::core
