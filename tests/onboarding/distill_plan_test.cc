// tests/onboarding/distill_plan_test.cc — what a distill job's plan passes
// to the trainer (onboarding/distill.h): the unmeasured pool and the old
// platforms' bank only when the weights give them a share, the weights as given
// but the column's, which is per old platform; the column's own request; the
// adapter distill's two steps.
#include <gtest/gtest.h>

#include <variant>
#include <vector>

#include "core/features.h"
#include "onboarding/distill.h"
#include "tests/lib/adapted_checkpoint.h"
#include "trainer/cost_model.h"

namespace tcl::onboarding {
namespace {

TEST(DistillPlanTest, TheBankNeedsOldPlatformsAnOldTermAndAShare) {
  trainer::DistillTargets w;  // the defaults: the bank is on
  EXPECT_TRUE(wants_old_bank(w, 1));
  EXPECT_FALSE(wants_old_bank(w, 0));  // no old platform: nothing to keep
  w.old_weight = 0;
  EXPECT_FALSE(wants_old_bank(w, 2));  // no old-platform KD term reads it
  w = {};
  w.old_bank_ratio = 0;
  EXPECT_FALSE(wants_old_bank(w, 2));
  w = {};
  w.max_old_bank = 0;
  EXPECT_FALSE(wants_old_bank(w, 2));
}

TEST(DistillPlanTest, PassesTheSourcesTheWeightsAskFor) {
  const std::vector<core::Record> pool(3), bank(5);
  trainer::DistillTargets w;
  w.old_bank_ratio = 0.5;
  w.max_old_bank = 1234;
  const auto plan = [&](const trainer::DistillTargets& weights, std::size_t old_platforms) {
    DistillSources s;
    s.old_descriptors.assign(old_platforms, std::vector<float>(core::kHardwareDim, 0.f));
    s.unlabeled = pool;
    s.old_bank = bank;
    return plan_distillation(weights, std::move(s));
  };
  const trainer::DistillTargets t = plan(w, 2);
  EXPECT_EQ(t.old_bank.size(), bank.size());
  EXPECT_EQ(t.unlabeled.size(), pool.size());
  EXPECT_EQ(t.old_bank_ratio, 0.5);
  EXPECT_EQ(t.max_old_bank, 1234);
  EXPECT_EQ(t.old_descriptors.size(), 2u);
  EXPECT_TRUE(plan(w, 0).old_bank.empty());  // no old platform
  w.old_weight = 0;
  EXPECT_TRUE(plan(w, 2).old_bank.empty());
  w = {};
  w.unlabeled_ratio = 0;
  EXPECT_TRUE(plan(w, 2).unlabeled.empty());
}

TEST(DistillPlanTest, TheColumnWeightIsPerOldPlatform) {
  EXPECT_EQ(column_term_weight(1.0, 0), 1.0);  // no old platform: the weight as given
  EXPECT_EQ(column_term_weight(1.0, 1), 1.0);
  EXPECT_EQ(column_term_weight(1.5, 3), 4.5);
  trainer::DistillTargets w;
  w.column_weight = 2.0;
  DistillSources s;
  s.old_descriptors.assign(3, std::vector<float>(core::kHardwareDim, 0.f));
  const trainer::DistillTargets t = plan_distillation(w, std::move(s));
  EXPECT_EQ(t.column_weight, 6.0);  // against old_weight on each of the 3 old platforms
  EXPECT_EQ(t.old_weight, w.old_weight);
}

// The column fine-tunes at fine-tuning's learning rate whatever the job's
// request carries (a distill's is the student's: the option learning_rate),
// with the request's data and the epochs asked for.
TEST(DistillPlanTest, TheColumnTrainsAtFineTuningsLearningRate) {
  trainer::TrainRequest student;
  student.optimisation.learning_rate = 4e-3;
  student.optimisation.seed = 7;
  const trainer::TrainRequest column = column_request(student, trainer::FineTune{.init_checkpoint = "T"}, 5);
  EXPECT_EQ(column.optimisation.learning_rate, trainer::Optimisation{}.learning_rate);
  EXPECT_NE(column.optimisation.learning_rate, 4e-3);
  EXPECT_EQ(column.optimisation.epochs, 5);
  EXPECT_EQ(column.optimisation.seed, 7u);
  EXPECT_FALSE(column.fisher.compute);
  ASSERT_TRUE(std::holds_alternative<trainer::FineTune>(column.start));
  EXPECT_EQ(std::get<trainer::FineTune>(column.start).init_checkpoint, "T");
}

// A student of core's feature widths, of `kind`, as checkpoint bytes.
std::string checkpoint_of(trainer::ModelKind kind, std::uint64_t seed) {
  trainer::ModelConfig c;
  c.kind = kind;
  c.token_dim = core::kTokenDim;
  c.descriptor_dim = core::kHardwareDim;
  c.seed = seed;
  auto m = trainer::CostModel::create(c);
  EXPECT_TRUE(m) << m.status().to_string();
  auto bytes = (*m)->save();
  EXPECT_TRUE(bytes) << bytes.status().to_string();
  return *bytes;
}

// The adapter trains on production's trunk (production's t4 adapter left out
// of it), as the caller's FineTune asks, with no Fisher. Keeping it beside
// production's other adapters is trainer::attach_adapter's (adapter_test.cc).
TEST(AdapterDistillTest, TrainsOnTheTrunkAsTheCallerAsks) {
  const std::string trunk = checkpoint_of(trainer::ModelKind::kMamba, 1);
  const std::string production = tcl::testing::with_adapter(trunk, "t4", 3);
  trainer::TrainRequest request;
  std::string from;
  const trainer::FineTune asked{.auto_schedule = true, .adapter = trainer::kDistillAdapter};
  ASSERT_TRUE(start_adapter_distill(production, asked, &from, &request).is_ok());
  EXPECT_EQ(from, trunk);
  ASSERT_TRUE(std::holds_alternative<trainer::FineTune>(request.start));
  const auto& tune = std::get<trainer::FineTune>(request.start);
  EXPECT_EQ(tune.init_checkpoint.data(), from.data());  // a view of what the caller keeps
  EXPECT_EQ(tune.adapter.rank, trainer::kDistillAdapter.rank);
  EXPECT_EQ(tune.adapter.layers, trainer::kDistillAdapter.layers);
  EXPECT_TRUE(tune.auto_schedule);
  EXPECT_FALSE(request.fisher.compute);
}

TEST(AdapterDistillTest, RefusesAProductionThatIsNotAMambaStudent) {
  trainer::TrainRequest request;
  std::string from;
  const trainer::FineTune asked{.adapter = trainer::kDistillAdapter};
  const Status s = start_adapter_distill(checkpoint_of(trainer::ModelKind::kMlp, 1), asked, &from, &request);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("\"method\": \"student\""), std::string::npos) << s.to_string();
  EXPECT_TRUE(std::holds_alternative<trainer::FreshModel>(request.start));  // left as it was
  EXPECT_EQ(start_adapter_distill("not a checkpoint", asked, &from, &request).code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace tcl::onboarding
