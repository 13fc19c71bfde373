// tests/api/ui_test.cc — the web console's files (api/handlers/ui.h) called directly: index.html at
// /ui, each file with its Content-Type, the CSP and nosniff on every answer (404 too), the ETag and a
// 304 for If-None-Match, and every file of ui/ compiled in (no file loaded from another host).
#include "api/handlers/ui.h"

#include <gtest/gtest.h>

#include <string>

#include "api/router.h"
#include "tests/api/handler_test_env.h"

namespace tcl::api {
namespace {

using testing::HandlerRequest;

TEST(UiTest, IndexIsServedAtUiWithTheConsolesHeaders) {
  HandlerRequest req;
  const Response res = handle_ui_file(req, ui_assets());
  ASSERT_EQ(res.status, http::status::ok) << res.body;
  EXPECT_EQ(res.content_type, "text/html; charset=utf-8");
  EXPECT_NE(res.body.find("<script type=\"module\" src=\"/ui/app.js\">"), std::string::npos);
  EXPECT_EQ(res.headers.at("Content-Security-Policy"), kUiContentSecurityPolicy);
  EXPECT_NE(res.headers.at("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(res.headers.at("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(res.headers.at("Cache-Control"), "no-cache");
  EXPECT_EQ(res.headers.at("ETag").front(), '"');
}

TEST(UiTest, EachFileHasItsContentTypeAndAnUnknownOneIs404WithTheSameHeaders) {
  HandlerRequest js({}, {{"file", "app.js"}});
  Response res = handle_ui_file(js, ui_assets());
  ASSERT_EQ(res.status, http::status::ok);
  EXPECT_EQ(res.content_type, "text/javascript; charset=utf-8");
  HandlerRequest css({}, {{"file", "style.css"}});
  res = handle_ui_file(css, ui_assets());
  ASSERT_EQ(res.status, http::status::ok);
  EXPECT_EQ(res.content_type, "text/css; charset=utf-8");
  HandlerRequest readme({}, {{"file", "README.md"}});  // the folder's note is not served
  res = handle_ui_file(readme, ui_assets());
  EXPECT_EQ(res.status, http::status::not_found);
  EXPECT_EQ(res.headers.at("X-Content-Type-Options"), "nosniff");
  HandlerRequest up({}, {{"file", "../openapi.yaml"}});
  EXPECT_EQ(handle_ui_file(up, ui_assets()).status, http::status::not_found);
}

TEST(UiTest, IfNoneMatchWithTheETagIs304WithoutABody) {
  HandlerRequest first({}, {{"file", "app.js"}});
  const std::string etag = handle_ui_file(first, ui_assets()).headers.at("ETag");
  HandlerRequest again({}, {{"file", "app.js"}});
  again.header("If-None-Match", "\"other\", " + etag);
  const Response res = handle_ui_file(again, ui_assets());
  EXPECT_EQ(res.status, http::status::not_modified);
  EXPECT_TRUE(res.body.empty());
  EXPECT_EQ(res.headers.at("ETag"), etag);
  HandlerRequest stale({}, {{"file", "app.js"}});
  stale.header("If-None-Match", "\"other\"");
  EXPECT_EQ(handle_ui_file(stale, ui_assets()).status, http::status::ok);
}

TEST(UiTest, EveryFileIsCompiledInAndNoneLoadsFromAnotherHostOrUsesInnerHtml) {
  ASSERT_GE(ui_assets().size(), 5u);
  for (const UiAsset& a : ui_assets()) {
    SCOPED_TRACE(std::string(a.name));
    EXPECT_FALSE(a.bytes.empty());
    // The one absolute URL is SVG's namespace name (an identifier, never fetched).
    std::string text(a.bytes);
    for (std::size_t at; (at = text.find("http://www.w3.org/2000/svg")) != std::string::npos;) text.erase(at, 26);
    EXPECT_EQ(text.find("http://"), std::string::npos);
    EXPECT_EQ(text.find("https://"), std::string::npos);
    EXPECT_EQ(text.find("src=\"//"), std::string::npos);
    EXPECT_EQ(text.find("href=\"//"), std::string::npos);
    EXPECT_EQ(a.bytes.find("innerHTML"), std::string_view::npos);
    EXPECT_EQ(a.bytes.find("insertAdjacentHTML"), std::string_view::npos);
    EXPECT_EQ(a.bytes.find("document.write"), std::string_view::npos);
  }
}

TEST(UiTest, RoutesAreOpenAndInline) {
  Router router;
  add_ui_routes(router);
  for (const char* path : {"/ui", "/ui/", "/ui/app.js"}) {
    const RouteMatch m = router.match(http::verb::get, path);
    ASSERT_NE(m.route, nullptr) << path;
    EXPECT_EQ(m.route->options.access, Access::kOpen);
    EXPECT_EQ(m.route->options.lane, Lane::kInline);
  }
}

}  // namespace
}  // namespace tcl::api
