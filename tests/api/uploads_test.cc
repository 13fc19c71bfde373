// tests/api/uploads_test.cc — the upload routes' header check: an
// Idempotency-Key is at most 255 visible ASCII characters, and a bad one is
// refused in our words, naming the header and the byte (not left to reach
// PostgreSQL, whose text would name an encoding).
#include "api/handlers/uploads.h"

#include <gtest/gtest.h>

#include <string>

namespace tcl::api {
namespace {

TEST(UploadsTest, IdempotencyKeyIsVisibleAsciiUpTo255) {
  EXPECT_TRUE(check_idempotency_key("").is_ok());  // no key
  EXPECT_TRUE(check_idempotency_key("run-2024-06-01/batch:7?x=~!").is_ok());
  EXPECT_TRUE(check_idempotency_key(std::string(255, 'k')).is_ok());

  const Status ff = check_idempotency_key("key\xff");
  EXPECT_EQ(ff.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ff.message(), "Idempotency-Key holds byte 0xff at offset 3; it must be visible ASCII (0x21 to 0x7e)");
  EXPECT_NE(check_idempotency_key("a b").message().find("byte 0x20 at offset 1"), std::string::npos);
  EXPECT_NE(check_idempotency_key("a\tb").message().find("byte 0x09"), std::string::npos);
  EXPECT_NE(check_idempotency_key(std::string("a\0b", 3)).message().find("byte 0x00"), std::string::npos);
  EXPECT_NE(check_idempotency_key("\x7f").message().find("byte 0x7f"), std::string::npos);
  const Status long_key = check_idempotency_key(std::string(256, 'k'));
  EXPECT_EQ(long_key.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(long_key.message(), "Idempotency-Key is 256 characters long; at most 255 are allowed");
}

}  // namespace
}  // namespace tcl::api
