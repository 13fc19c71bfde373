// tests/api/ingest_test.cc — a streamed JSON-lines body into one upload
// (api/ingest.h), against a real PostgreSQL: counts of accepted, duplicate and
// rejected lines (by reason), the errors that store nothing (empty body,
// corrupt gzip, a body cut off), the Idempotency-Key replay, and
// platform_mismatch's wording.
#include "api/ingest.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "registry/platform_store.h"
#include "registry/upload_store.h"
#include "tests/lib/shared_data.h"
#include "tests/registry/registry_test_env.h"

namespace tcl::api {
namespace {

namespace json = boost::json;
using registry::testing::query_text;

constexpr const char* kTarget = "llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu";

class IngestTest : public registry::testing::MigratedDbTest {
 protected:
  void SetUp() override {
    MigratedDbTest::SetUp();
    registry::PlatformStore platforms(*pool_);
    registry::NewPlatform p;
    p.name = "x16";
    p.target = kTarget;
    p.hardware_params = {16, 64, 64, 0, 0, 0, 0, 0};
    auto created = platforms.create(p);
    ASSERT_TRUE(created) << created.status().to_string();
    platform_ = *created;
    uploads_ = std::make_unique<registry::UploadStore>(*pool_);
    lines_ = tcl::testing::shared_data_lines("x86-16c", 20);
    ASSERT_EQ(lines_.size(), 20u);
  }

  // Sends `chunks` through a channel (closed with `end`), as the server does.
  Result<UploadOutcome> upload(const std::vector<std::string>& chunks, const UploadOptions& options = {},
                               Status end = Status::ok()) {
    ChunkChannel body(chunks.size() + 1);
    for (const auto& c : chunks) body.push(c);
    body.close(std::move(end));
    return run_upload(*uploads_, platform_, body, options);
  }
  std::string body_of(std::size_t first, std::size_t n) const {
    std::string out;
    for (std::size_t i = first; i < first + n; ++i) out += lines_[i] + "\n";
    return out;
  }
  std::int64_t stored() const { return std::stoll(query_text(url_, "SELECT count(*) FROM measurements")); }

  registry::PlatformRow platform_;
  std::unique_ptr<registry::UploadStore> uploads_;
  std::vector<std::string> lines_;
};

TEST_F(IngestTest, StoresEveryLineAndCountsDuplicatesTheSecondTime) {
  const std::string body = body_of(0, 10);
  // Split mid-line: lines are reassembled across chunks.
  auto first = upload({body.substr(0, 1000), body.substr(1000)});
  ASSERT_TRUE(first) << first.status().to_string();
  EXPECT_FALSE(first->replayed);
  EXPECT_EQ(first->tally.accepted, 10);
  EXPECT_EQ(first->tally.duplicates, 0);
  EXPECT_EQ(first->tally.body_bytes, static_cast<std::int64_t>(body.size()));
  const json::object report = json::parse(first->report_json).as_object();
  EXPECT_EQ(report.at("lines").as_int64(), 10);
  EXPECT_EQ(report.at("accepted").as_int64(), 10);
  EXPECT_EQ(report.at("rejected_count").as_int64(), 0);
  EXPECT_EQ(stored(), 10);

  auto second = upload({body_of(5, 10)});  // 5 seen, 5 new
  ASSERT_TRUE(second) << second.status().to_string();
  EXPECT_EQ(second->tally.accepted, 5);
  EXPECT_EQ(second->tally.duplicates, 5);
  EXPECT_EQ(stored(), 15);
}

TEST_F(IngestTest, RejectsBadLinesByReasonAndKeepsTheGoodOnes) {
  std::string unmeasured = lines_[3];
  const auto r = unmeasured.find("\"r\": [[");
  ASSERT_NE(r, std::string::npos);
  unmeasured = unmeasured.substr(0, r) + R"("r": [[0], 0, 0, 1727494472], "v": "v0.6"})";
  std::string other_hw = lines_[4];
  const auto hw = other_hw.find("[16, 64, 64, 0, 0, 0, 0, 0]");
  ASSERT_NE(hw, std::string::npos);
  other_hw.replace(hw, 27, "[24, 64, 64, 0, 0, 0, 0, 0]");
  std::string other_target = lines_[5];
  const auto t = other_target.find(kTarget);
  ASSERT_NE(t, std::string::npos);
  other_target.replace(t, std::string(kTarget).size(), "cuda -keys=cuda,gpu -arch=sm_80");

  UploadOptions options;
  options.max_line_bytes = 4096;
  options.max_rejected_listed = 3;
  const std::string body = lines_[0] + "\n" + "{\"i\": 1}\n" + "# a comment\n\n" + std::string(5000, 'x') + "\n" +
                           unmeasured + "\n" + other_hw + "\n" + other_target + "\n" + lines_[1] + "\n";
  auto out = upload({body}, options);
  ASSERT_TRUE(out) << out.status().to_string();
  EXPECT_EQ(out->tally.accepted, 2);
  EXPECT_EQ(out->tally.rejected[static_cast<int>(RejectReason::kInvalidRecord)], 1);
  EXPECT_EQ(out->tally.rejected[static_cast<int>(RejectReason::kLineTooLong)], 1);
  EXPECT_EQ(out->tally.rejected[static_cast<int>(RejectReason::kUnmeasured)], 1);
  EXPECT_EQ(out->tally.rejected[static_cast<int>(RejectReason::kHardwareMismatch)], 1);
  EXPECT_EQ(out->tally.rejected[static_cast<int>(RejectReason::kTargetMismatch)], 1);
  const json::object report = json::parse(out->report_json).as_object();
  EXPECT_EQ(report.at("rejected_count").as_int64(), 5);  // exact although the list is capped
  const json::array& listed = report.at("rejected").as_array();
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[0].as_object().at("line").as_int64(), 2);
  EXPECT_EQ(listed[1].as_object().at("line").as_int64(), 5);  // the comment and blank line are counted lines
  EXPECT_TRUE(report.at("rejected_truncated").as_bool());
  EXPECT_EQ(stored(), 2);
}

// Issue 45 #10/#11: a record the schema would refuse (a workload key over
// 2,000 bytes, an empty one; NUL in a string, which the record parser
// refuses) is one rejected line in our words; the rest of the upload is
// stored, and no PostgreSQL text shows.
TEST_F(IngestTest, ARecordTheSchemaWouldRefuseIsOneRejectedLine) {
  const std::string key_prefix = R"({"i": [["[\"07f9fcad27bdd3233f86fe35a5185d33\")";
  ASSERT_EQ(lines_[2].rfind(key_prefix, 0), 0u) << lines_[2].substr(0, 80);
  const auto with_key_tail = [&](const std::string& line, const std::string& tail) {
    return key_prefix.substr(0, key_prefix.size() - 2) + tail + line.substr(key_prefix.size() - 2);
  };
  const std::string long_key = with_key_tail(lines_[2], std::string(2100, 'k'));  // > 2000 bytes
  const std::string nul_key = with_key_tail(lines_[3], "\\u0000");
  std::string nul_target = lines_[4];
  const auto t = nul_target.find(kTarget);
  ASSERT_NE(t, std::string::npos);
  nul_target.insert(t + std::string(kTarget).size(), "\\u0000");
  std::string empty_key = lines_[5];
  const auto end_of_key = empty_key.find("]\", \"llvm");
  ASSERT_NE(end_of_key, std::string::npos);
  empty_key = R"({"i": [["   )" + empty_key.substr(end_of_key + 1);  // empty once canonical

  const std::string body =
      lines_[0] + "\n" + long_key + "\n" + nul_key + "\n" + nul_target + "\n" + empty_key + "\n" + lines_[1] + "\n";
  auto out = upload({body});
  ASSERT_TRUE(out) << out.status().to_string();
  EXPECT_EQ(out->tally.accepted, 2);
  EXPECT_EQ(out->tally.rejected[static_cast<int>(RejectReason::kInvalidRecord)], 4);
  const json::object report = json::parse(out->report_json).as_object();
  const json::array& listed = report.at("rejected").as_array();
  ASSERT_EQ(listed.size(), 4u) << out->report_json;
  const std::string expected[] = {"workload_key is ", "i[0][0]: workload_key must hold no control characters",
                                  "i[0][1]: target must hold no control characters",
                                  "workload_key is empty once whitespace outside its strings is removed"};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(listed[i].at("line").as_int64(), static_cast<std::int64_t>(i + 2));
    const std::string reason(listed[i].at("reason").as_string());
    EXPECT_EQ(reason.rfind(expected[i], 0), 0u) << reason;
  }
  EXPECT_NE(std::string(listed[0].at("reason").as_string()).find("at most 2000"), std::string::npos);
  for (const char* leak : {"violates", "constraint", "tasks", "invalid byte sequence", "0x00"}) {
    EXPECT_EQ(out->report_json.find(leak), std::string::npos) << leak << " in " << out->report_json;
  }
  EXPECT_EQ(stored(), 2);
}

TEST_F(IngestTest, AnEmptyBodyIsInvalidAndStoresNothing) {
  auto none = upload({});
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  auto comments = upload({"# only a comment\n\n"});
  EXPECT_EQ(comments.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(comments.status().message().find("the upload body is empty"), std::string::npos);
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM uploads"), "0");
}

TEST_F(IngestTest, ABodyCutOffStoresNothing) {
  auto out = upload({body_of(0, 10)}, {}, Status::cancelled("client went away"));
  EXPECT_EQ(out.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(stored(), 0);
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM uploads"), "0");
}

TEST_F(IngestTest, CorruptGzipIsInvalidAndStoresNothing) {
  UploadOptions options;
  options.gzip = true;
  auto out = upload({"this is not gzip at all"}, options);
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(stored(), 0);
}

TEST_F(IngestTest, AnIdempotencyKeySeenBeforeAnswersTheFirstReport) {
  UploadOptions options;
  options.idempotency_key = "batch-7";
  auto first = upload({body_of(0, 3)}, options);
  ASSERT_TRUE(first) << first.status().to_string();
  EXPECT_FALSE(first->replayed);
  auto again = upload({body_of(10, 5)}, options);  // another body: the key wins, nothing is read
  ASSERT_TRUE(again) << again.status().to_string();
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(again->report_json, first->report_json);
  EXPECT_EQ(again->tally.accepted, 0);
  EXPECT_EQ(stored(), 3);
}

TEST_F(IngestTest, PlatformMismatchNamesTheField) {
  const std::int64_t same[8] = {16, 64, 64, 0, 0, 0, 0, 0};
  const std::int64_t fewer_cores[8] = {8, 64, 64, 0, 0, 0, 0, 0};
  EXPECT_EQ(platform_mismatch(platform_, kTarget, same), "");
  EXPECT_EQ(platform_mismatch(platform_, kTarget, nullptr), "");
  EXPECT_EQ(platform_mismatch(platform_, kTarget, fewer_cores),
            "hardware_params.num_cores is 8 but platform 'x16' has 16");
  EXPECT_EQ(platform_mismatch(platform_, "cuda -arch=sm_80", same),
            "target kind 'cuda' does not match platform 'x16' (llvm)");
  // The platform names no -mcpu: any record's -mcpu fits it.
  EXPECT_EQ(platform_mismatch(platform_, "llvm -keys=cpu -mcpu=skylake", same), "");
  registry::PlatformRow skylake = platform_;
  skylake.target = "llvm -keys=cpu -mcpu=skylake";
  EXPECT_EQ(platform_mismatch(skylake, "llvm -keys=cpu -mcpu=znver3", same),
            "target -mcpu=znver3 does not match platform 'x16' (-mcpu=skylake)");
}

}  // namespace
}  // namespace tcl::api
