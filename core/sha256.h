// core/sha256.h — SHA-256 digests (OpenSSL EVP), used for token hashes,
// migration checksums, weight checksums and upload body hashes.
// Thread-safe: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace tcl {

using Sha256Digest = std::array<std::uint8_t, 32>;

Sha256Digest sha256(std::string_view bytes);
// Lower-case hex, 64 characters.
std::string sha256_hex(std::string_view bytes);
std::string to_hex(const std::uint8_t* data, std::size_t size);

// Incremental hashing for streamed bodies. Not thread-safe; one per stream.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void update(std::string_view bytes);
  std::string finish_hex();  // may be called once

 private:
  void* ctx_;  // EVP_MD_CTX*, kept opaque so OpenSSL stays out of this header
};

// `n` cryptographically random bytes as lower-case hex (2n characters).
std::string random_hex(std::size_t n);

}  // namespace tcl
