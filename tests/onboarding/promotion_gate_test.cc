// The promotion gate on crafted metrics: every rule and its stated reason.
#include "onboarding/promotion_gate.h"

#include <gtest/gtest.h>

namespace tcl::onboarding {
namespace {

PlatformComparison old_one(const char* name, double teacher, double student) {
  return PlatformComparison{name, false, teacher, student};
}
PlatformComparison new_one(const char* name, double teacher_zero_shot, double student) {
  return PlatformComparison{name, true, teacher_zero_shot, student};
}

TEST(PromotionGateTest, PromotesWhenNothingIsForgottenAndTheNewPlatformIsLearned) {
  auto d = promotion_decision({old_one("a", 0.90, 0.895), old_one("b", 0.80, 0.81), new_one("c", 0.60, 0.85)}, 0.01);
  EXPECT_TRUE(d.promote);
  ASSERT_EQ(d.reasons.size(), 3u);
  EXPECT_NE(d.reasons[0].find("kept"), std::string::npos) << d.reasons[0];
  EXPECT_NE(d.reasons[2].find("learned"), std::string::npos) << d.reasons[2];
}

TEST(PromotionGateTest, ForgettingMoreThanTheMarginBlocks) {
  auto d = promotion_decision({old_one("a", 0.90, 0.885), new_one("c", 0.60, 0.85)}, 0.01);
  EXPECT_FALSE(d.promote);
  EXPECT_NE(d.reasons[0].find("forgot"), std::string::npos) << d.reasons[0];
  // The margin is a setting: 0.02 lets the same version through.
  EXPECT_TRUE(promotion_decision({old_one("a", 0.90, 0.885), new_one("c", 0.60, 0.85)}, 0.02).promote);
  // Exactly at the margin still passes.
  EXPECT_TRUE(promotion_decision({old_one("a", 0.90, 0.89), new_one("c", 0.60, 0.85)}, 0.01 + 1e-12).promote);
}

TEST(PromotionGateTest, TheNewPlatformMustBeatZeroShot) {
  auto d = promotion_decision({old_one("a", 0.9, 0.9), new_one("c", 0.70, 0.70)}, 0.01);
  EXPECT_FALSE(d.promote);
  EXPECT_NE(d.reasons[1].find("not better than zero-shot"), std::string::npos) << d.reasons[1];
}

TEST(PromotionGateTest, MissingEvaluationData) {
  // An old platform without data does not block, and says so.
  auto d =
      promotion_decision({PlatformComparison{"a", false, std::nullopt, std::nullopt}, new_one("c", 0.5, 0.8)}, 0.01);
  EXPECT_TRUE(d.promote);
  EXPECT_NE(d.reasons[0].find("no evaluation data"), std::string::npos);
  // The new platform without data blocks.
  EXPECT_FALSE(promotion_decision({PlatformComparison{"c", true, std::nullopt, 0.9}}, 0.01).promote);
  // No new platform at all blocks.
  EXPECT_FALSE(promotion_decision({old_one("a", 0.9, 0.95)}, 0.01).promote);
}

}  // namespace
}  // namespace tcl::onboarding
