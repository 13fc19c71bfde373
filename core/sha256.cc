#include "core/sha256.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <stdexcept>
#include <vector>

namespace tcl {

namespace {

// SHA-256 fetched once: EVP_sha256() in a digest call looks the
// implementation up by name every time (~0.2 us, and a lock). Never freed.
const EVP_MD* sha256_md() {
  static const EVP_MD* const md = [] {
    EVP_MD* m = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    if (m == nullptr) throw std::runtime_error("OpenSSL: no SHA-256");
    return m;
  }();
  return md;
}

EVP_MD_CTX* as_ctx(void* ctx) { return static_cast<EVP_MD_CTX*>(ctx); }

}  // namespace

Sha256Digest sha256(std::string_view bytes) {
  Sha256Digest out{};
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), out.data(), &len, sha256_md(), nullptr) != 1) {
    throw std::runtime_error("EVP_Digest(sha256) failed");
  }
  return out;
}

std::string to_hex(const std::uint8_t* data, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(size * 2, '0');
  for (std::size_t i = 0; i < size; ++i) {
    s[2 * i] = kDigits[data[i] >> 4];
    s[2 * i + 1] = kDigits[data[i] & 15];
  }
  return s;
}

std::string sha256_hex(std::string_view bytes) {
  const Sha256Digest d = sha256(bytes);
  return to_hex(d.data(), d.size());
}

Sha256Stream::Sha256Stream() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr || EVP_DigestInit_ex(as_ctx(ctx_), sha256_md(), nullptr) != 1) {
    EVP_MD_CTX_free(as_ctx(ctx_));
    throw std::runtime_error("EVP_DigestInit_ex(sha256) failed");
  }
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(as_ctx(ctx_)); }

void Sha256Stream::update(std::string_view bytes) { EVP_DigestUpdate(as_ctx(ctx_), bytes.data(), bytes.size()); }

Sha256Digest Sha256Stream::finish() {
  Sha256Digest d{};
  unsigned int len = 0;
  // DigestInit again with the same algorithm only resets the state.
  if (EVP_DigestFinal_ex(as_ctx(ctx_), d.data(), &len) != 1 || len != d.size() ||
      EVP_DigestInit_ex(as_ctx(ctx_), sha256_md(), nullptr) != 1) {
    throw std::runtime_error("OpenSSL: SHA-256 failed");
  }
  return d;
}

std::string Sha256Stream::finish_hex() {
  const Sha256Digest d = finish();
  return to_hex(d.data(), d.size());
}

Sha256Digest Sha256Stream::digest(std::string_view bytes) {
  if (EVP_DigestInit_ex(as_ctx(ctx_), sha256_md(), nullptr) != 1) throw std::runtime_error("OpenSSL: SHA-256 failed");
  update(bytes);
  return finish();
}

std::string random_hex(std::size_t n) {
  std::vector<std::uint8_t> buf(n);
  if (RAND_bytes(buf.data(), static_cast<int>(n)) != 1) throw std::runtime_error("RAND_bytes failed");
  return to_hex(buf.data(), buf.size());
}

}  // namespace tcl
