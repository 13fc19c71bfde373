// tests/api/platforms_test.cc — the platform handlers (api/handlers/platforms.h)
// called directly, against a real PostgreSQL: create (201 + Location, 400
// naming the field, 409 for a taken name), list, get with counts, and the one
// platform lookup's 404.
#include "api/handlers/platforms.h"

#include <gtest/gtest.h>

#include <string>

#include "api/http_error.h"
#include "tests/api/handler_test_env.h"

namespace tcl::api {
namespace {

namespace json = boost::json;
using testing::body_json;
using testing::error_code;
using testing::HandlerRequest;

class PlatformHandlersTest : public testing::HandlerDbTest {};

TEST_F(PlatformHandlersTest, CreateAnswers201WithLocationAndGetShowsCounts) {
  HandlerRequest create(R"({"name": "sm80", "target": "cuda -arch=sm_80",
                            "hardware_params": [-1, 16, 64, 49152, 2147483647, 1024, 8, 32], "description": "A100"})");
  const Response created = handle_create_platform(create, *platforms_);
  ASSERT_EQ(created.status, http::status::created) << created.body;
  EXPECT_EQ(created.headers.at("Location"), "/v1/platforms/sm80");
  const json::object c = body_json(created);
  EXPECT_EQ(c.at("name").as_string(), "sm80");
  EXPECT_EQ(c.at("hardware_params").as_array().at(0).as_int64(), -1);
  EXPECT_FALSE(c.contains("counts"));  // counts only on GET of one platform

  HandlerRequest get({}, {{"name", "sm80"}});
  const Response got = handle_get_platform(get, *platforms_);
  ASSERT_EQ(got.status, http::status::ok) << got.body;
  const json::object g = body_json(got);
  EXPECT_EQ(g.at("description").as_string(), "A100");
  EXPECT_EQ(g.at("counts").as_object().at("measurements").as_int64(), 0);
  EXPECT_EQ(g.at("onboarding").as_object().at("state").as_string(), "registered");
}

TEST_F(PlatformHandlersTest, CreateNamesTheFieldAtFault) {
  HandlerRequest no_hw(R"({"name": "a", "target": "llvm"})");
  Response r = handle_create_platform(no_hw, *platforms_);
  EXPECT_EQ(r.status, http::status::bad_request);
  EXPECT_EQ(body_json(r).at("error").at("details").at("field").as_string(), "hardware_params");

  HandlerRequest extra(R"({"name": "a", "target": "llvm", "hardware_params": [1,2,3,4,5,6,7,8], "colour": "red"})");
  r = handle_create_platform(extra, *platforms_);
  EXPECT_EQ(r.status, http::status::bad_request);
  EXPECT_EQ(body_json(r).at("error").at("details").at("field").as_string(), "colour");

  HandlerRequest bad_name(R"({"name": "Big", "target": "llvm", "hardware_params": [1,2,3,4,5,6,7,8]})");
  r = handle_create_platform(bad_name, *platforms_);
  EXPECT_EQ(r.status, http::status::bad_request);
  EXPECT_EQ(body_json(r).at("error").at("details").at("field").as_string(), "name");

  HandlerRequest taken(R"({"name": "x16", "target": "llvm", "hardware_params": [1,2,3,4,5,6,7,8]})");
  EXPECT_EQ(handle_create_platform(taken, *platforms_).status, http::status::conflict);
}

TEST_F(PlatformHandlersTest, ListHasEveryPlatformWithoutCounts) {
  HandlerRequest list;
  const Response r = handle_list_platforms(list, *platforms_);
  ASSERT_EQ(r.status, http::status::ok);
  const json::object all_body = body_json(r);
  const json::array& all = all_body.at("platforms").as_array();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].at("name").as_string(), "x16");
  EXPECT_EQ(all[0].at("target").as_string(), testing::kX16Target);
  EXPECT_FALSE(all[0].as_object().contains("counts"));

  // ?with=counts: each with its counts and onboarding state, as GET /v1/platforms/{name} has them.
  HandlerRequest counted;
  counted.get().query["with"] = "counts";
  const Response c = handle_list_platforms(counted, *platforms_);
  ASSERT_EQ(c.status, http::status::ok) << c.body;
  HandlerRequest one({}, {{"name", "x16"}});
  const json::object detail = body_json(handle_get_platform(one, *platforms_));
  const json::object counted_body = body_json(c);
  const json::object& item = counted_body.at("platforms").at(0).as_object();
  EXPECT_EQ(item.at("counts"), detail.at("counts"));
  EXPECT_EQ(item.at("onboarding"), detail.at("onboarding"));
  counted.get().query["with"] = "everything";
  const Response bad = handle_list_platforms(counted, *platforms_);
  EXPECT_EQ(bad.status, http::status::bad_request);
  EXPECT_EQ(body_json(bad).at("error").at("details").at("field").as_string(), "with");
}

TEST_F(PlatformHandlersTest, UnknownAndInvalidNamesAre404InOneWording) {
  for (const std::string& name : {std::string("nope"), std::string("Not A Name"), std::string(65, 'a')}) {
    HandlerRequest get({}, {{"name", name}});
    const Response r = handle_get_platform(get, *platforms_);
    EXPECT_EQ(r.status, http::status::not_found) << name;
    EXPECT_EQ(error_code(r), "NOT_FOUND");
    EXPECT_EQ(body_json(r).at("error").at("message").as_string(), "platform '" + name + "' does not exist");
  }
}

TEST_F(PlatformHandlersTest, TheLookupChecksTheNameThenAsksTheStore) {
  EXPECT_TRUE(check_platform_name("x16").is_ok());
  EXPECT_EQ(check_platform_name("X16").code(), StatusCode::kNotFound);
  auto found = find_platform(*platforms_, "x16");
  ASSERT_TRUE(found) << found.status().to_string();
  EXPECT_EQ(found->id, x16_.id);
  EXPECT_EQ(found->counts.measurements, 0);
  EXPECT_EQ(find_platform(*platforms_, "y16").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(find_platform(*platforms_, "../x16").status().message(), "platform '../x16' does not exist");
  auto got = get_platform(*platforms_, "x16");
  ASSERT_TRUE(got) << got.status().to_string();
  EXPECT_EQ(got->name, "x16");
  EXPECT_EQ(get_platform(*platforms_, "").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tcl::api
