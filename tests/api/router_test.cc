#include "api/router.h"

#include <gtest/gtest.h>

namespace tcl::api {
namespace {

Handler named(std::string name) {
  return [name](const Request&) {
    Response r;
    r.body = name;
    return r;
  };
}

std::string call(const RouteMatch& m) {
  http::request<http::string_body> raw;
  Request req{raw, "", {}, m.params, "", std::nullopt, nullptr, ""};
  return m.route->handler(req).body;
}

TEST(RouterTest, MatchesLiteralAndParameterSegments) {
  Router r;
  r.add(http::verb::get, "/v1/platforms", named("list"));
  r.add(http::verb::get, "/v1/platforms/{name}", named("one"));
  r.add(http::verb::post, "/v1/platforms/{name}/measurements", named("upload"));

  RouteMatch m = r.match(http::verb::get, "/v1/platforms/x86-24c");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(call(m), "one");
  EXPECT_EQ(m.route->path_template, "/v1/platforms/{name}");
  EXPECT_EQ(m.params.at("name"), "x86-24c");

  m = r.match(http::verb::get, "/v1/platforms");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(call(m), "list");

  m = r.match(http::verb::post, "/v1/platforms/a/measurements");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.params.at("name"), "a");
}

TEST(RouterTest, LiteralBeatsParameter) {
  Router r;
  r.add(http::verb::get, "/v1/models/{version}", named("version"));
  r.add(http::verb::get, "/v1/models/latest", named("latest"));
  EXPECT_EQ(call(r.match(http::verb::get, "/v1/models/latest")), "latest");
  EXPECT_EQ(call(r.match(http::verb::get, "/v1/models/7")), "version");
}

TEST(RouterTest, UnknownPathAndWrongMethod) {
  Router r;
  r.add(http::verb::get, "/v1/platforms/{name}", named("one"));
  r.add(http::verb::delete_, "/v1/platforms/{name}", named("delete"));

  RouteMatch none = r.match(http::verb::get, "/v1/nothing");
  EXPECT_EQ(none.route, nullptr);
  EXPECT_TRUE(none.allowed.empty());

  RouteMatch wrong = r.match(http::verb::post, "/v1/platforms/a");
  EXPECT_EQ(wrong.route, nullptr);
  ASSERT_EQ(wrong.allowed.size(), 3u);  // GET, DELETE, and HEAD with GET
  EXPECT_EQ(wrong.allowed[0], http::verb::get);
  EXPECT_EQ(wrong.allowed[2], http::verb::head);
}

TEST(RouterTest, HeadIsServedWhereverGetIs) {
  Router r;
  r.add(http::verb::get, "/v1/platforms/{name}", named("get"));
  r.add(http::verb::post, "/v1/platforms", named("create"));
  RouteMatch head = r.match(http::verb::head, "/v1/platforms/a");
  ASSERT_NE(head.route, nullptr);
  EXPECT_EQ(call(head), "get");
  EXPECT_EQ(head.params.at("name"), "a");
  RouteMatch no_get = r.match(http::verb::head, "/v1/platforms");  // POST only: no HEAD either
  EXPECT_EQ(no_get.route, nullptr);
  ASSERT_EQ(no_get.allowed.size(), 1u);
  EXPECT_EQ(no_get.allowed[0], http::verb::post);
}

TEST(RouterTest, StreamedBodiesRunOnTheStreamLane) {
  Router r;
  r.add(http::verb::post, "/v1/up", named("up"), RouteOptions{Access::kWrite, std::nullopt, /*stream_body=*/true});
  r.add(http::verb::get, "/v1/down", named("down"));
  EXPECT_EQ(r.match(http::verb::post, "/v1/up").route->options.lane, Lane::kStream);
  EXPECT_EQ(r.match(http::verb::get, "/v1/down").route->options.lane, Lane::kDefault);
}

TEST(RouterTest, DecodesPercentEscapesAndIgnoresTrailingSlash) {
  Router r;
  r.add(http::verb::get, "/v1/platforms/{name}", named("one"));
  RouteMatch m = r.match(http::verb::get, "/v1/platforms/a%2Eb/");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.params.at("name"), "a.b");
  EXPECT_EQ(r.match(http::verb::get, "/v1/platforms/a%zz").route, nullptr);
  EXPECT_EQ(r.match(http::verb::get, "/v1/platforms/").route, nullptr);  // empty parameter
}

TEST(RouterTest, RejectsDuplicateRoutes) {
  Router r;
  r.add(http::verb::get, "/v1/a/{x}", named("a"));
  EXPECT_THROW(r.add(http::verb::get, "/v1/a/{x}", named("b")), std::invalid_argument);
  EXPECT_NO_THROW(r.add(http::verb::post, "/v1/a/{x}", named("c")));
}

TEST(RouterTest, ParsesQueryStrings) {
  auto q = parse_query("fraction=0.1&strategy=rdu&name=a%20b&flag");
  EXPECT_EQ(q.at("fraction"), "0.1");
  EXPECT_EQ(q.at("strategy"), "rdu");
  EXPECT_EQ(q.at("name"), "a b");
  EXPECT_EQ(q.at("flag"), "");
}

// Issue 45 finding 17: '+' in a path became a space. It is a space only in a query string.
TEST(RouterTest, PlusIsASpaceOnlyInAQuery) {
  EXPECT_EQ(parse_query("q=a+b").at("q"), "a b");
  auto segs = split_path("/v1/platforms/a+b");
  ASSERT_TRUE(segs);
  EXPECT_EQ(segs->back(), "a+b");
}

TEST(RouterTest, RouteOptionsAreKept) {
  Router r;
  r.add(http::verb::post, "/v1/up", named("up"), RouteOptions{Access::kWrite, std::size_t{42}});
  RouteMatch m = r.match(http::verb::post, "/v1/up");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->options.access, Access::kWrite);
  EXPECT_EQ(*m.route->options.body_limit, 42u);
}

}  // namespace
}  // namespace tcl::api
