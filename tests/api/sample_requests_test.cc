// tests/api/sample_requests_test.cc — GET /v1/platforms/{name}/sample-requests
// (api/handlers/sample_requests.h) called directly, against a real PostgreSQL: an unknown platform is
// 404, a platform with no rounds an empty list (the rounds themselves: tests/registry/sample_store_test.cc,
// SampleStore::list).
#include "api/handlers/sample_requests.h"

#include <gtest/gtest.h>

#include "api/http_error.h"
#include "tests/api/handler_test_env.h"

namespace tcl::api {
namespace {

using testing::body_json;
using testing::error_code;
using testing::HandlerRequest;

class SampleRequestHandlersTest : public testing::HandlerDbTest {};

TEST_F(SampleRequestHandlersTest, ListIs404ForAnUnknownPlatformAndEmptyWithoutRounds) {
  registry::SampleStore samples(*pool_);
  HandlerRequest unknown({}, {{"name", "nope"}});
  Response res = handle_list_sample_requests(unknown, *platforms_, samples);
  EXPECT_EQ(res.status, http::status::not_found);
  EXPECT_EQ(error_code(res), "NOT_FOUND");
  HandlerRequest x16({}, {{"name", "x16"}});
  res = handle_list_sample_requests(x16, *platforms_, samples);
  ASSERT_EQ(res.status, http::status::ok) << res.body;
  EXPECT_TRUE(body_json(res).at("sample_requests").as_array().empty());
}

}  // namespace
}  // namespace tcl::api
