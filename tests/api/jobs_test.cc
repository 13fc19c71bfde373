// tests/api/jobs_test.cc — GET /v1/jobs (api/handlers/jobs.h) called directly, against a real
// PostgreSQL: every platform's jobs, newest first, each as GET /v1/jobs/{id} gives it.
#include "api/handlers/jobs.h"

#include <gtest/gtest.h>

#include <string>

#include "registry/job_queue.h"
#include "tests/api/handler_test_env.h"

namespace tcl::api {
namespace {

using testing::body_json;
using testing::HandlerRequest;

class JobHandlersTest : public testing::HandlerDbTest {};

TEST_F(JobHandlersTest, ListGivesEveryPlatformsJobsNewestFirst) {
  registry::JobQueue jobs(*pool_);
  HandlerRequest empty;
  Response res = handle_list_jobs(empty, jobs);
  ASSERT_EQ(res.status, http::status::ok) << res.body;
  EXPECT_TRUE(body_json(res).at("jobs").as_array().empty());

  registry::NewPlatform p;
  p.name = "t4";
  p.target = "cuda";
  auto t4 = platforms_->create(p);
  ASSERT_TRUE(t4);
  auto first = jobs.enqueue(x16_.id, registry::JobKind::kTrain, R"({"epochs": 1})");
  auto second = jobs.enqueue(t4->id, registry::JobKind::kDistill, R"({"method": "adapter"})");
  ASSERT_TRUE(first && second);
  HandlerRequest list;
  res = handle_list_jobs(list, jobs);
  ASSERT_EQ(res.status, http::status::ok) << res.body;
  const boost::json::object body = body_json(res);
  const auto& items = body.at("jobs").as_array();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].at("id").as_int64(), second->id);
  EXPECT_EQ(items[0].at("platform").as_string(), "t4");
  EXPECT_EQ(items[0].at("kind").as_string(), "distill");
  EXPECT_EQ(items[0].at("state").as_string(), "queued");
  EXPECT_TRUE(items[0].at("progress").is_object());
  EXPECT_EQ(items[1].at("id").as_int64(), first->id);
  EXPECT_EQ(items[1].at("platform").as_string(), "x16");
}

}  // namespace
}  // namespace tcl::api
