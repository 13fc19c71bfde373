// core/sha256.h against the FIPS 180-2 test vectors, one-shot, streamed
// and reused.
#include "core/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace tcl {
namespace {

const char kAbc448[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
const char kEmptyHex[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const char kAbcHex[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
const char kAbc448Hex[] = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
const char kMillionAHex[] = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";

std::string hex(const Sha256Digest& d) { return to_hex(d.data(), d.size()); }

TEST(Sha256, OneShotKnownVectors) {
  EXPECT_EQ(sha256_hex(""), kEmptyHex);
  EXPECT_EQ(sha256_hex("abc"), kAbcHex);
  EXPECT_EQ(sha256_hex(kAbc448), kAbc448Hex);
  EXPECT_EQ(hex(sha256(std::string(1000000, 'a'))), kMillionAHex);
}

TEST(Sha256Stream, UpdatesInPiecesGiveTheWholeDigest) {
  Sha256Stream s;
  const std::string chunk(1000, 'a');
  for (int i = 0; i < 1000; ++i) s.update(chunk);
  EXPECT_EQ(s.finish_hex(), kMillionAHex);
  // finish starts again, empty.
  EXPECT_EQ(s.finish_hex(), kEmptyHex);
  s.update("a");
  s.update("");
  s.update("bc");
  EXPECT_EQ(hex(s.finish()), kAbcHex);
}

TEST(Sha256Stream, DigestIsOneMessageAndDropsPendingInput) {
  Sha256Stream s;
  EXPECT_EQ(hex(s.digest("abc")), kAbcHex);
  EXPECT_EQ(hex(s.digest(kAbc448)), kAbc448Hex);
  s.update("pending bytes");
  EXPECT_EQ(hex(s.digest("")), kEmptyHex);
  EXPECT_EQ(hex(s.digest("abc")), kAbcHex);
}

}  // namespace
}  // namespace tcl
