// api/json_body.h: the limits a body is scanned against before any DOM is
// built (issue 45 #8), and NUL refused in every string (issue 45 #11).
#include "api/json_body.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

// Counts every byte allocated through operator new in this test binary: a
// refused body must not cost its DOM. Not under ThreadSanitizer (scripts/tsan.sh),
// whose runtime owns operator new; the plain build runs this check.
#if !defined(__SANITIZE_THREAD__)
namespace {
std::atomic<std::size_t> g_allocated{0};
}  // namespace

void* operator new(std::size_t n) {
  g_allocated += n;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace tcl::api {
namespace {

[[maybe_unused]] std::string array_body(std::string_view field, std::size_t items) {
  std::string body = "{\"platform\": \"x\", \"" + std::string(field) + "\": [";
  for (std::size_t i = 0; i < items; ++i) body += i == 0 ? "0" : ",0";
  return body + "]}";
}

#if !defined(__SANITIZE_THREAD__)
TEST(JsonBodyTest, AnArrayOverTheLimitIsRefusedBeforeItsDomIsBuilt) {
  const std::string body = array_body("programs", 1'000'000);  // 2 MB of text; ~16 MB as a DOM
  const std::size_t before = g_allocated;
  auto refused = parse_json_object(body, JsonLimits{.max_array_items = 1000});
  const std::size_t allocated = g_allocated - before;
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().field(), "programs");
  EXPECT_NE(refused.status().message().find("more than 1000 items"), std::string::npos) << refused.status().message();
  EXPECT_LT(allocated, 64u << 10) << "the refused body was built in memory";

  auto within = parse_json_object(array_body("programs", 1000), JsonLimits{.max_array_items = 1000});
  ASSERT_TRUE(within) << within.status().to_string();
  EXPECT_EQ(within->at("programs").as_array().size(), 1000u);
  EXPECT_TRUE(parse_json_object(body)) << "no limit by default";
}
#endif

TEST(JsonBodyTest, TheLimitHoldsForArraysAtAnyDepthAndNamesThem) {
  const JsonLimits two{.max_array_items = 2};
  EXPECT_TRUE(parse_json_object(R"({"a": [[1, 2], [3]], "b": {"c": [1, 2]}})", two));
  auto deep = parse_json_object(R"({"a": [[1, 2], [1, 2, 3]]})", two);
  ASSERT_FALSE(deep);
  EXPECT_EQ(deep.status().field(), "a[1]");
  auto nested = parse_json_object(R"({"a": [1], "b": {"c": [1, 2, 3]}})", two);
  ASSERT_FALSE(nested);
  EXPECT_EQ(nested.status().field(), "b.c");
}

TEST(JsonBodyTest, NulIsRefusedInEveryStringAndKeyNamingWhere) {
  struct Case {
    const char* body;
    const char* field;
  } cases[] = {
      {R"({"reason": "ok\u0000cut"})", "reason"},
      {R"({"target": "\u0000"})", "target"},
      {R"({"programs": [{"workload_key": "k"}, {"workload_key": "k\u0000"}]})", "programs[1].workload_key"},
      {R"({"records": ["line", "\u0000"]})", "records[1]"},
      {R"({"options": {"x\u0000": 1}})", "options.x?"},
  };
  for (const Case& c : cases) {
    auto r = parse_json_object(c.body);
    ASSERT_FALSE(r) << c.body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_EQ(r.status().field(), c.field) << c.body;
    EXPECT_NE(r.status().message().find("NUL"), std::string::npos) << r.status().message();
  }
  EXPECT_TRUE(parse_json_object(R"({"reason": "\\u0000 spelled out is fine"})"));
}

TEST(JsonBodyTest, FieldReadersRefuseNul) {
  boost::json::object o{{"name", std::string("a\0b", 3)}};
  auto required = required_string(o, "name");
  ASSERT_FALSE(required);
  EXPECT_EQ(required.status().field(), "name");
  auto optional = optional_string(o, "name");
  ASSERT_FALSE(optional);
  EXPECT_EQ(optional.status().field(), "name");
}

TEST(JsonBodyTest, SyntaxErrorsStillNameLineAndColumn) {
  auto r = parse_json_object("{\n  \"a\": [1,\n  ]}");
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("line 3, column 3"), std::string::npos) << r.status().message();
  EXPECT_EQ(parse_json_object("").status().message(), "body is empty; expected a JSON object");
  EXPECT_EQ(parse_json_object("[1]").status().message(), "body must be a JSON object");
}

}  // namespace
}  // namespace tcl::api
