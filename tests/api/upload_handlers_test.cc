// tests/api/upload_handlers_test.cc — the upload handlers
// (api/handlers/uploads.h) called directly, against a real PostgreSQL: a
// stored upload (201, its report, its counters), the Idempotency-Key replay
// (200 + Idempotent-Replayed), the header checks that answer before the body
// is read, and the download's stream of stored lines.
#include "api/handlers/uploads.h"

#include <gtest/gtest.h>

#include <prometheus/registry.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "api/chunk_channel.h"
#include "registry/upload_store.h"
#include "tests/api/handler_test_env.h"
#include "tests/lib/shared_data.h"

namespace tcl::api {
namespace {

namespace json = boost::json;
using registry::UploadKind;
using testing::body_json;
using testing::HandlerRequest;

class UploadHandlersTest : public testing::HandlerDbTest {
 protected:
  void SetUp() override {
    HandlerDbTest::SetUp();
    uploads_ = std::make_unique<registry::UploadStore>(*pool_);
    metrics_ = std::make_unique<UploadKindMetrics>(registry_, "measurements");
    for (const std::string& line : tcl::testing::shared_data_lines("x86-16c", 6)) body_ += line + "\n";
  }
  // POST .../measurements with `body` on the stream, as the server sends it.
  Response post(HandlerRequest& req, const std::string& body) {
    ChunkChannel stream(4);
    stream.push(body);
    stream.close();
    req.get().body_stream = &stream;
    return handle_upload(req, *platforms_, *uploads_, UploadKind::kMeasurements, {}, *metrics_);
  }

  prometheus::Registry registry_;
  std::unique_ptr<registry::UploadStore> uploads_;
  std::unique_ptr<UploadKindMetrics> metrics_;
  std::string body_;
};

TEST_F(UploadHandlersTest, StoresAnUploadAndReplaysItByKey) {
  HandlerRequest first({}, {{"name", "x16"}});
  first.header("Idempotency-Key", "batch-1");
  const Response stored = post(first, body_);
  ASSERT_EQ(stored.status, http::status::created) << stored.body;
  EXPECT_EQ(stored.body.back(), '\n');
  EXPECT_EQ(body_json(stored).at("accepted").as_int64(), 6);
  EXPECT_FALSE(stored.headers.contains("Idempotent-Replayed"));
  EXPECT_EQ(metrics_->stored->Value(), 1);
  EXPECT_EQ(metrics_->accepted->Value(), 6);
  EXPECT_EQ(metrics_->bytes->Value(), static_cast<double>(body_.size()));

  HandlerRequest again({}, {{"name", "x16"}});
  again.header("Idempotency-Key", "batch-1");
  const Response replayed = post(again, "not even a record\n");
  ASSERT_EQ(replayed.status, http::status::ok) << replayed.body;
  EXPECT_EQ(replayed.headers.at("Idempotent-Replayed"), "true");
  EXPECT_EQ(replayed.body, stored.body);
  EXPECT_EQ(metrics_->replayed->Value(), 1);
  EXPECT_EQ(metrics_->accepted->Value(), 6);  // a replay adds no lines
}

TEST_F(UploadHandlersTest, RejectedLinesAreCountedByReason) {
  HandlerRequest req({}, {{"name", "x16"}});
  const Response r = post(req, body_ + "{\"i\": 1}\n");
  ASSERT_EQ(r.status, http::status::created) << r.body;
  EXPECT_EQ(body_json(r).at("rejected_count").as_int64(), 1);
  EXPECT_EQ(metrics_->rejected->Value(), 1);
  EXPECT_EQ(metrics_->by_reason[static_cast<int>(core::RejectReason::kInvalidRecord)]->Value(), 1);
}

TEST_F(UploadHandlersTest, HeadersAndPlatformAreCheckedBeforeTheBody) {
  HandlerRequest bad_key({}, {{"name", "x16"}});
  bad_key.header("Idempotency-Key", "has space");
  Response r = post(bad_key, body_);
  EXPECT_EQ(r.status, http::status::bad_request);
  EXPECT_EQ(body_json(r).at("error").at("details").at("header").as_string(), "Idempotency-Key");

  HandlerRequest unknown({}, {{"name", "y16"}});
  r = post(unknown, body_);
  EXPECT_EQ(r.status, http::status::not_found);
  EXPECT_EQ(body_json(r).at("error").at("message").as_string(), "platform 'y16' does not exist");

  HandlerRequest brotli({}, {{"name", "x16"}});
  brotli.header("Content-Encoding", "br");
  r = post(brotli, body_);
  EXPECT_EQ(r.status, http::status::unsupported_media_type);
  EXPECT_EQ(testing::error_code(r), "UNSUPPORTED_MEDIA_TYPE");

  HandlerRequest empty({}, {{"name", "x16"}});
  EXPECT_EQ(post(empty, "\n# nothing\n").status, http::status::bad_request);
  EXPECT_EQ(metrics_->error->Value(), 1);  // only the upload that read its body counts as an error
  EXPECT_EQ(metrics_->stored->Value(), 0);
}

TEST_F(UploadHandlersTest, DownloadStreamsTheStoredLines) {
  HandlerRequest up({}, {{"name", "x16"}});
  ASSERT_EQ(post(up, body_).status, http::status::created);

  HandlerRequest down({}, {{"name", "x16"}});
  Response r = handle_download(down, *platforms_, *uploads_, UploadKind::kMeasurements);
  ASSERT_EQ(r.status, http::status::ok);
  EXPECT_EQ(r.content_type, "application/x-ndjson");
  ASSERT_TRUE(r.stream);
  ChunkChannel out(16);
  ASSERT_TRUE(r.stream(out).is_ok());
  out.close();
  std::string text, chunk;
  while (out.pop_wait(&chunk)) text += chunk;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 6);

  HandlerRequest unknown({}, {{"name", "y16"}});
  EXPECT_EQ(handle_download(unknown, *platforms_, *uploads_, UploadKind::kMeasurements).status,
            http::status::not_found);
}

}  // namespace
}  // namespace tcl::api
