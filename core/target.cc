#include "core/target.h"

#include <charconv>

namespace tcl::core {

namespace {

std::string_view trim_quotes(std::string_view v) {
  while (!v.empty() && (v.front() == '"' || v.front() == '\'')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == '"' || v.back() == '\'')) v.remove_suffix(1);
  return v;
}

std::int64_t to_int(std::string_view v) {
  std::int64_t x = 0;
  const auto res = std::from_chars(v.data(), v.data() + v.size(), x);
  return res.ec == std::errc() ? x : 0;
}

void split_commas(std::string_view v, std::vector<std::string>* out) {
  while (!v.empty()) {
    const std::size_t c = v.find(',');
    const std::string_view item = v.substr(0, c);
    if (!item.empty()) out->emplace_back(item);
    if (c == std::string_view::npos) break;
    v.remove_prefix(c + 1);
  }
}

void default_keys(std::string_view kind, std::vector<std::string>* keys) {
  if (kind == "llvm" || kind == "c") {
    keys->emplace_back("cpu");
  } else if (kind == "cuda" || kind == "nvptx") {
    keys->emplace_back("cuda");
    keys->emplace_back("gpu");
  } else if (kind == "rocm" || kind == "opencl" || kind == "vulkan" || kind == "metal" || kind == "webgpu") {
    keys->emplace_back(kind);
    keys->emplace_back("gpu");
  } else if (!kind.empty()) {
    keys->emplace_back(kind);
  }
}

}  // namespace

bool TargetInfo::has_key(std::string_view key) const {
  for (const std::string& k : keys) {
    if (k == key) return true;
  }
  return false;
}

int TargetInfo::cuda_sm() const {
  if (arch.size() < 4 || arch.compare(0, 3, "sm_") != 0) return 0;
  return static_cast<int>(to_int(std::string_view(arch).substr(3)));
}

TargetInfo parse_target(std::string_view t) {
  TargetInfo info;
  bool explicit_keys = false;
  bool first = true;
  while (!t.empty()) {
    const std::size_t b = t.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) break;
    t.remove_prefix(b);
    const std::size_t e = t.find_first_of(" \t\r\n");
    const std::string_view word = t.substr(0, e);
    t.remove_prefix(e == std::string_view::npos ? t.size() : e);
    if (first && word.front() != '-') {
      info.kind = std::string(word);
      first = false;
      continue;
    }
    first = false;
    if (word.size() < 2 || word.front() != '-') continue;
    std::string_view opt = word.substr(1);
    if (!opt.empty() && opt.front() == '-') opt.remove_prefix(1);  // "--x=y"
    const std::size_t eq = opt.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = opt.substr(0, eq);
    const std::string_view value = trim_quotes(opt.substr(eq + 1));
    if (name == "keys") {
      explicit_keys = true;
      split_commas(value, &info.keys);
    } else if (name == "device") {
      info.device = std::string(value);
    } else if (name == "mcpu") {
      info.mcpu = std::string(value);
    } else if (name == "mtriple") {
      info.mtriple = std::string(value);
    } else if (name == "arch") {
      info.arch = std::string(value);
    } else if (name == "model") {
      info.model = std::string(value);
    } else if (name == "mattr") {
      split_commas(value, &info.mattr);
    } else if (name == "num-cores" || name == "num_cores") {
      info.num_cores = to_int(value);
    } else if (name == "max_num_threads") {
      info.max_num_threads = to_int(value);
    } else if (name == "thread_warp_size") {
      info.thread_warp_size = to_int(value);
    } else if (name == "max_shared_memory_per_block") {
      info.max_shared_memory_per_block = to_int(value);
    }
  }
  if (!explicit_keys) default_keys(info.kind, &info.keys);
  if (!info.device.empty() && !info.has_key(info.device)) {
    info.keys.insert(info.keys.begin(), info.device);
  }
  return info;
}

}  // namespace tcl::core
