// tests/onboarding/best_of_test.cc — the best-of distill's pieces
// (onboarding/best_of.h): the new platform gets the candidate with the best
// validation score (a tie to the student), the choice's split is by whole
// tasks, and the composed version serves every old platform with its model
// in the parent bit for bit, the new platform with the chosen model, and a
// platform it has not learned with the student.
#include "onboarding/best_of.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/program_id.h"
#include "tests/lib/adapted_checkpoint.h"
#include "tests/trainer/small_models.h"
#include "trainer/cost_model.h"
#include "trainer/model_config.h"
#include "trainer/score_model.h"

namespace tcl::onboarding {
namespace {

CandidateScore scored(Candidate c, double top1, std::int64_t tasks = 5) {
  CandidateScore s{.candidate = c};
  s.validation.top1.mean_ratio = top1;
  s.validation.tasks = tasks;
  return s;
}

TEST(BestOfTest, ChoosesTheBestValidationScoreATieToTheStudent) {
  EXPECT_EQ(choose_candidate({}), Candidate::kStudent);  // nothing scored
  const std::vector<CandidateScore> scores = {
      scored(Candidate::kStudent, 0.70), scored(Candidate::kAdapterOnStudent, 0.74),
      scored(Candidate::kAdapterOnTeacher, 0.81), scored(Candidate::kFineTune, 0.79)};
  EXPECT_EQ(choose_candidate(scores), Candidate::kAdapterOnTeacher);
  const std::vector<CandidateScore> tie = {scored(Candidate::kFineTune, 0.8), scored(Candidate::kStudent, 0.8)};
  EXPECT_EQ(choose_candidate(tie), Candidate::kStudent);
  // A candidate scored on no task takes no part.
  const std::vector<CandidateScore> unscored = {scored(Candidate::kStudent, 0.5), scored(Candidate::kFineTune, 0.9, 0)};
  EXPECT_EQ(choose_candidate(unscored), Candidate::kStudent);
  EXPECT_EQ(candidate_name(Candidate::kAdapterOnTeacher), "adapter on the parent's trunk");
  // The rule: "validation" takes the best score, "fine-tune" the fine-tune whatever the scores.
  EXPECT_EQ(chosen_candidate(Choice::kValidation, scores), Candidate::kAdapterOnTeacher);
  EXPECT_EQ(chosen_candidate(Choice::kFineTune, scores), Candidate::kFineTune);
  EXPECT_EQ(chosen_candidate(Choice::kFineTune, {}), Candidate::kFineTune);
  EXPECT_EQ(kDefaultChoice, Choice::kAdapterOnStudent);  // issue 48's levers (docs/continual.md)
  EXPECT_EQ(choice_name(Choice::kValidation), "validation");
  EXPECT_EQ(chosen_candidate(Choice::kSoup, scores), Candidate::kSoup);
  EXPECT_EQ(choice_name(Choice::kSoup), "soup");
  // "adapter": the adapter on the parent's trunk, whatever the scores (the best here is another).
  EXPECT_EQ(chosen_candidate(Choice::kAdapter, {}), Candidate::kAdapterOnTeacher);
  const std::vector<CandidateScore> fine_tune_best = {scored(Candidate::kAdapterOnTeacher, 0.5),
                                                      scored(Candidate::kFineTune, 0.9)};
  EXPECT_EQ(chosen_candidate(Choice::kAdapter, fine_tune_best), Candidate::kAdapterOnTeacher);
  EXPECT_EQ(choice_name(Choice::kAdapter), "adapter");
  // "adapter-on-student": the adapter on this step's student, whatever the scores.
  EXPECT_EQ(chosen_candidate(Choice::kAdapterOnStudent, fine_tune_best), Candidate::kAdapterOnStudent);
  EXPECT_EQ(choice_name(Choice::kAdapterOnStudent), "adapter-on-student");
  // choice_named is choice_name's inverse, and names nothing else.
  for (Choice c : kChoices) {
    EXPECT_EQ(choice_named(choice_name(c)), c) << choice_name(c);
  }
  EXPECT_FALSE(choice_named("adapter on the student").has_value());
  EXPECT_FALSE(choice_named("").has_value());
}

TEST(BestOfTest, TheChoiceSplitsTheSelectionByWholeTasks) {
  std::vector<core::Record> selection;
  for (int t = 0; t < 40; ++t) {
    for (int i = 0; i < 3; ++i) {
      core::Record r;
      r.workload_key = "[\"task" + std::to_string(t) + "\", " + std::to_string(t) + "]";
      selection.push_back(r);
    }
  }
  const ChoiceSplit split = choice_split(selection, 0.25, kChoiceSalt);
  EXPECT_EQ(split.fit.size() + split.validation.size(), selection.size());
  EXPECT_GT(split.validation_tasks, 0);
  EXPECT_GT(split.fit_tasks, split.validation_tasks);
  std::set<std::string> fit, validation;
  for (const auto& r : split.fit) fit.insert(core::canonical_workload_key(r.workload_key));
  for (const auto& r : split.validation) validation.insert(core::canonical_workload_key(r.workload_key));
  for (const auto& key : validation) EXPECT_EQ(fit.count(key), 0u) << key;  // no task on both sides
  EXPECT_EQ(static_cast<std::int64_t>(validation.size()), split.validation_tasks);
  // One task: nothing to validate on; the whole selection trains (the student is chosen).
  const ChoiceSplit one = choice_split(std::span(selection).first(3), 0.25, kChoiceSalt);
  EXPECT_TRUE(one.validation.empty());
  EXPECT_EQ(one.fit.size(), 3u);
}

std::string plain(std::uint64_t seed) {
  auto m = trainer::make_score_model(trainer::small_config(trainer::ModelKind::kMamba, seed));
  EXPECT_TRUE(m.is_ok());
  return trainer::save_score_model(**m);
}

// A platform's scores from a version's checkpoint, on fixed inputs.
torch::Tensor scores_of(const std::string& checkpoint, std::string_view platform) {
  auto model = trainer::CostModel::load_for_platform(checkpoint, platform);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  if (!model.is_ok()) return torch::zeros({1});
  torch::manual_seed(3);
  const torch::Tensor tokens = torch::randn({5, 7, 8});
  const torch::Tensor lengths = torch::full({5}, 7, torch::kLong);
  const torch::Tensor descriptor = torch::randn({5, 4});
  torch::NoGradGuard no_grad;
  return (*model)->score_model()->forward(tokens, lengths, descriptor);
}

// The version of a best-of step from a parent that already keeps an adapter
// (gpu-a) and serves x86 by its trunk.
TEST(BestOfTest, OldPlatformsKeepTheirModelsBitForBitAndAnUnknownOneGetsTheStudent) {
  const std::string parent_trunk = plain(1);
  const std::string parent = testing::with_adapter(parent_trunk, "gpu-a", 5);
  const std::vector<std::string> old = {"x86", "gpu-a"};
  auto old_models = served_models(parent, old);
  ASSERT_TRUE(old_models.is_ok()) << old_models.status().to_string();
  const std::string student = plain(2), fine_tune = plain(3);

  for (Candidate chosen : kCandidates) {
    std::string chosen_model;
    if (chosen == Candidate::kFineTune || chosen == Candidate::kAdapterOnTeacher) chosen_model = fine_tune;
    if (chosen == Candidate::kAdapterOnStudent) {
      // An adapter trained on the student: with_adapter keeps one; take its bytes back out.
      auto adapters = trainer::load_checkpoint_adapters(testing::with_adapter(student, "gpu-new", 9));
      ASSERT_TRUE(adapters.is_ok());
      chosen_model = adapters->at("gpu-new");
    }
    auto version = compose_best_of({.student = student,
                                    .old_platforms = old,
                                    .old_models = *old_models,
                                    .platform = "gpu-new",
                                    .chosen = chosen,
                                    .chosen_model = chosen_model});
    ASSERT_TRUE(version.is_ok()) << version.status().to_string();
    SCOPED_TRACE(std::string(candidate_name(chosen)));
    // Old platforms: the parent's models, bit for bit.
    EXPECT_TRUE(torch::equal(scores_of(*version, "x86"), scores_of(parent, "x86")));
    EXPECT_TRUE(torch::equal(scores_of(*version, "gpu-a"), scores_of(parent, "gpu-a")));
    EXPECT_FALSE(torch::equal(scores_of(*version, "gpu-a"), scores_of(parent, "x86")));
    // A platform it has not learned: the student (forward transfer comes from it).
    EXPECT_TRUE(torch::equal(scores_of(*version, "unknown"), scores_of(student, "")));
    // The new platform: the chosen candidate.
    const torch::Tensor fresh = scores_of(*version, "gpu-new");
    if (chosen == Candidate::kStudent) {
      EXPECT_TRUE(torch::equal(fresh, scores_of(student, "")));
      EXPECT_EQ(*trainer::own_model_platforms(*version), (std::vector<std::string>{"gpu-a", "x86"}));
    } else if (chosen == Candidate::kAdapterOnStudent) {
      EXPECT_TRUE(torch::equal(fresh, scores_of(testing::with_adapter(student, "gpu-new", 9), "gpu-new")));
      EXPECT_EQ(*trainer::adapter_platforms(*version), std::vector<std::string>{"gpu-new"});
    } else {
      EXPECT_TRUE(torch::equal(fresh, scores_of(fine_tune, "")));
      EXPECT_EQ(*trainer::pinned_platforms(*version), (std::vector<std::string>{"gpu-a", "gpu-new", "x86"}));
    }
  }
  EXPECT_EQ(compose_best_of({.student = student, .old_platforms = old, .platform = "gpu-new"}).status().code(),
            StatusCode::kInvalidArgument);  // old models missing
  EXPECT_EQ(
      compose_best_of({.student = student, .platform = "gpu-new", .chosen = Candidate::kFineTune}).status().code(),
      StatusCode::kInvalidArgument);  // the chosen model missing
}

TEST(BestOfTest, ServingSaysWhichModelAndWhy) {
  const std::vector<Serving> serving = {
      {.platform = "x86",
       .model = "pinned",
       .origin = "the parent's model (the trunk)",
       .from_version = 4,
       .reason = "old"},
      {.platform = "gpu",
       .model = "pinned",
       .origin = "fine-tune",
       .reason = "best",
       .scores = {scored(Candidate::kStudent, 0.6), scored(Candidate::kFineTune, 0.7)}}};
  const boost::json::object j = serving_json(serving);
  EXPECT_EQ(j.at("x86").at("from_version").as_int64(), 4);
  EXPECT_EQ(j.at("gpu").at("origin").as_string(), "fine-tune");
  EXPECT_FALSE(j.at("gpu").as_object().contains("from_version"));
  EXPECT_EQ(j.at("gpu").at("validation").as_array().size(), 2u);
  EXPECT_EQ(j.at("gpu").at("validation").as_array()[1].at("candidate").as_string(), "fine-tune");
  EXPECT_DOUBLE_EQ(j.at("gpu").at("validation").as_array()[1].at("top1").as_double(), 0.7);
}

}  // namespace
}  // namespace tcl::onboarding
