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

// Incremental hashing (streamed bodies), and a reusable context for hashing
// many small messages (digest(): no allocation or algorithm look-up per
// message). Not thread-safe; one per thread or stream.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void update(std::string_view bytes);
  // The digest of everything update()d since construction or the last
  // finish; the stream then starts again, empty.
  Sha256Digest finish();
  std::string finish_hex();
  // The digest of `bytes` alone (drops anything update()d before).
  Sha256Digest digest(std::string_view bytes);

 private:
  void* ctx_;  // EVP_MD_CTX*, kept opaque so OpenSSL stays out of this header
};

// `n` cryptographically random bytes as lower-case hex (2n characters).
std::string random_hex(std::size_t n);

}  // namespace tcl
