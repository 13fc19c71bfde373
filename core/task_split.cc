#include "core/task_split.h"

#include <string>

#include "core/sha256.h"

namespace tcl::core {

std::int64_t task_split_hash(std::string_view key) {
  const Sha256Digest d = sha256(key);
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | d[static_cast<std::size_t>(i)];
  return static_cast<std::int64_t>(v);
}

bool in_holdout(std::string_view key, double fraction, std::uint64_t salt) {
  std::uint64_t h = 0;
  if (salt == 0) {
    h = static_cast<std::uint64_t>(task_split_hash(key));
  } else {
    std::string salted = std::to_string(salt);
    salted.push_back('\n');
    salted.append(key);
    h = static_cast<std::uint64_t>(task_split_hash(salted));
  }
  // The top 53 bits as a uniform number in [0, 1).
  const double u = static_cast<double>(h >> 11) / 9007199254740992.0;
  return u < fraction;
}

}  // namespace tcl::core
