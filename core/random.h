// core/random.h — SplitMix64 (Steele, Lea, Flood 2014), TCL's one seeded
// generator. Ours, not <random>'s, so a seed gives the same numbers on every
// machine and standard library (std::shuffle and the distributions are not
// specified). Every seeded result in TCL (splits, batch order, dropout masks,
// random picks, sampled schedules) depends on this exact sequence: do not
// change it. Thread-safety: a SplitMix64 is a value; one per thread/stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tcl::core {

inline constexpr std::uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ULL;

// The generator's output for state `x`: mix(x + gamma). Stateless, so it also
// serves as a counter-based generator and a 64-bit hash.
constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += kSplitMix64Gamma;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

class SplitMix64 {
 public:
  constexpr explicit SplitMix64(std::uint64_t seed) noexcept : state_(seed) {}

  constexpr std::uint64_t next() noexcept {
    const std::uint64_t out = splitmix64(state_);
    state_ += kSplitMix64Gamma;
    return out;
  }
  // In [0, n), n > 0, by modulo (bias < n / 2^64). Consumes one number.
  constexpr std::uint64_t below(std::uint64_t n) noexcept { return next() % n; }
  // In [0, n), n > 0, exactly uniform (rejection; almost always one number).
  constexpr std::uint64_t below_unbiased(std::uint64_t n) noexcept {
    const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    for (;;) {
      const std::uint64_t r = next();
      if (r >= threshold) return r % n;
    }
  }

 private:
  std::uint64_t state_;
};

// Fisher–Yates from the back with below(i): a seeded, portable std::shuffle.
template <typename T>
void shuffle(std::vector<T>& v, SplitMix64& rng) {
  for (std::size_t i = v.size(); i > 1; --i) {
    std::swap(v[i - 1], v[static_cast<std::size_t>(rng.below(i))]);
  }
}

}  // namespace tcl::core
