// tests/api/scoring_test.cc — the one scoring home (api/scoring.h): the fast
// path and the facade give the same scores, a batch that does not fit the
// model is refused in trainer::check_batch's words (the one FeatureBatch
// check, the same for both paths), and non-finite scores are a 500 naming
// the program.
#include "api/scoring.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "core/features.h"
#include "core/platform.h"
#include "tests/lib/model_fixture.h"
#include "tests/lib/shared_data.h"
#include "trainer/fast_inference.h"

namespace tcl::api {
namespace {

// A version of a fresh student, with or without its fast path.
std::unique_ptr<LoadedModel> loaded(bool fast) {
  auto m = std::make_unique<LoadedModel>();
  m->version = 7;
  m->platforms = {"x16"};
  auto model = trainer::CostModel::load(tcl::testing::fresh_checkpoint(3));
  EXPECT_TRUE(model) << model.status().to_string();
  m->model = std::move(*model);
  if (fast) {
    auto f = trainer::StudentInference::create(*m->model);
    EXPECT_TRUE(f) << f.status().to_string();
    m->fast = std::move(*f);
  }
  return m;
}

class ScoringTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto records = tcl::testing::shared_data_records("x86-16c", 5);
    ASSERT_EQ(records.size(), 5u);
    constexpr int L = 72;
    tokens_.assign(records.size() * L * core::kTokenDim, 0.0f);
    for (std::size_t i = 0; i < records.size(); ++i) {
      lengths_.push_back(core::encode_tokens(records[i].steps, L, tokens_.data() + i * L * core::kTokenDim));
    }
    descriptor_ = core::descriptor_of(
        core::Platform{tcl::testing::kServingTarget, core::HardwareParams{16, 64, 64, 0, 0, 0, 0, 0}});
    batch_ = trainer::FeatureBatch{5, L, tokens_, lengths_, descriptor_};
  }
  std::vector<float> tokens_;
  std::vector<std::int32_t> lengths_;
  core::HardwareDescriptor descriptor_;
  trainer::FeatureBatch batch_;
};

TEST_F(ScoringTest, FastPathAndFacadeScoreAlike) {
  const auto fast = loaded(true), facade = loaded(false);
  ASSERT_NE(fast->fast, nullptr);
  std::vector<float> a(5), b(5);
  ASSERT_TRUE(score_batch(*fast, batch_, a).is_ok());
  ASSERT_TRUE(score_batch(*facade, batch_, b).is_ok());
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(a[i], b[i], 1e-4) << i;
  EXPECT_NE(a[0], a[1]);  // real programs, real scores
  EXPECT_TRUE(check_scores(*fast, a).is_ok());
}

TEST_F(ScoringTest, ABatchThatDoesNotFitIsRefusedAlikeOnBothPaths) {
  for (const bool fast : {true, false}) {
    const auto m = loaded(fast);
    std::vector<float> scores(5);
    trainer::FeatureBatch short_lengths = batch_;
    short_lengths.lengths = std::span<const std::int32_t>(lengths_).first(4);
    Status s = score_batch(*m, short_lengths, scores);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), "batch: lengths: got 4 values, expected 5") << fast;

    std::vector<std::int32_t> too_long = lengths_;
    too_long[2] = 73;
    trainer::FeatureBatch bad_length = batch_;
    bad_length.lengths = too_long;
    s = score_batch(*m, bad_length, scores);
    EXPECT_EQ(s.message(), "batch: program 2 has length 73 outside [0, 72]") << fast;
  }
  std::vector<float> none;
  EXPECT_TRUE(score_batch(*loaded(true), trainer::FeatureBatch{0, 1, {}, {}, descriptor_}, none).is_ok());
}

TEST_F(ScoringTest, NonFiniteScoresAreOurErrorNamingTheProgram) {
  const auto m = loaded(false);
  const std::vector<float> scores = {0.5f, -1.0f, std::numeric_limits<float>::quiet_NaN(),
                                     std::numeric_limits<float>::infinity()};
  const Status s = check_scores(*m, scores);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "model version 7 gave a non-finite score for program 2");
  EXPECT_TRUE(platform_covered(*m, "x16"));
  EXPECT_FALSE(platform_covered(*m, "x1"));
}

}  // namespace
}  // namespace tcl::api
