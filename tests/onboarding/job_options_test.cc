// tests/onboarding/job_options_test.cc — the options of a train or distill job, as
// POST /v1/platforms/{name}/jobs checks them and the worker reads them:
// defaults by kind and distill method, every value kept, bounds, types, unknown and wrong-kind
// keys refused with the option named.
#include "onboarding/job_options.h"

#include <gtest/gtest.h>

#include <string>

namespace tcl::onboarding {
namespace {

using registry::JobKind;

TEST(JobOptionsTest, DefaultsFollowTheKind) {
  auto train = parse_job_options("{}", JobKind::kTrain);
  ASSERT_TRUE(train.is_ok()) << train.status().to_string();
  EXPECT_EQ(train->epochs, trainer::TrainRequest{}.optimisation.epochs);
  EXPECT_EQ(train->learning_rate, 2e-3);  // Optimisation's
  EXPECT_EQ(train->model, "mamba");
  EXPECT_FALSE(train->auto_schedule);
  // A distill's default method: best-of with the adapter-on-student choice (issue 48, docs/continual.md), the
  // student's epochs and learning rate, the adapter's rank and layers.
  auto by_default = parse_job_options("{}", JobKind::kDistill);
  ASSERT_TRUE(by_default.is_ok()) << by_default.status().to_string();
  EXPECT_EQ(by_default->method, JobOptions::DistillMethod::kBestOf);
  EXPECT_EQ(by_default->choice, Choice::kAdapterOnStudent);
  EXPECT_EQ(by_default->epochs, trainer::kDistillStudentEpochs);
  EXPECT_EQ(by_default->learning_rate, trainer::kDistillStudentLearningRate);
  EXPECT_EQ(by_default->adapter_rank, trainer::kDistillAdapter.rank);
  // The per-platform adapter alone, at its settings.
  auto adapter = parse_job_options(R"({"method": "adapter"})", JobKind::kDistill);
  ASSERT_TRUE(adapter.is_ok()) << adapter.status().to_string();
  EXPECT_EQ(adapter->method, JobOptions::DistillMethod::kAdapter);
  EXPECT_EQ(adapter->epochs, 24);           // trainer::kDistillAdapterEpochs
  EXPECT_EQ(adapter->learning_rate, 0.01);  // trainer::kDistillAdapterLearningRate
  EXPECT_EQ(adapter->adapter_rank, 4);      // trainer::kDistillAdapter
  EXPECT_EQ(adapter->adapter_layers, trainer::AdapterLayers::kAll);
  EXPECT_EQ(distill_method_name(adapter->method), "adapter");
  auto distill = parse_job_options(R"({"method": "student"})", JobKind::kDistill);
  ASSERT_TRUE(distill.is_ok());
  EXPECT_EQ(distill->method, JobOptions::DistillMethod::kStudent);
  EXPECT_EQ(distill->epochs, 12);                                           // trainer::kDistillStudentEpochs
  EXPECT_EQ(distill->column_epochs, 12);                                    // trainer::kDistillColumnEpochs
  EXPECT_EQ(distill->learning_rate, trainer::kDistillStudentLearningRate);  // the student's (session 26)
  EXPECT_EQ(distill->old_weight, 2.0);                                      // issue 19's continual study
  EXPECT_EQ(distill->ewc_weight, 0.2);
  EXPECT_EQ(distill->old_bank_ratio, trainer::DistillTargets{}.old_bank_ratio);  // the bank is on by default
  EXPECT_GT(distill->old_bank_ratio, 0);
  EXPECT_EQ(distill->max_old_bank, trainer::DistillTargets{}.max_old_bank);
  // best-of (onboarding/best_of.h): the student's defaults, and both methods' options taken.
  auto best_of = parse_job_options(R"({"method": "best-of", "adapter_rank": 8, "ewc_weight": 0.3})", JobKind::kDistill);
  ASSERT_TRUE(best_of.is_ok()) << best_of.status().to_string();
  EXPECT_EQ(best_of->method, JobOptions::DistillMethod::kBestOf);
  EXPECT_EQ(distill_method_name(best_of->method), "best-of");
  EXPECT_EQ(best_of->epochs, trainer::kDistillStudentEpochs);
  EXPECT_EQ(best_of->learning_rate, trainer::kDistillStudentLearningRate);
  EXPECT_EQ(best_of->adapter_rank, 8);
  EXPECT_EQ(best_of->ewc_weight, 0.3);
  // Its choice of the new platform's model: an adapter on the new student unless asked.
  EXPECT_EQ(best_of->choice, Choice::kAdapterOnStudent);
  EXPECT_EQ(choice_name(best_of->choice), "adapter-on-student");
  auto by_fine_tune = parse_job_options(R"({"method": "best-of", "choice": "fine-tune"})", JobKind::kDistill);
  ASSERT_TRUE(by_fine_tune.is_ok()) << by_fine_tune.status().to_string();
  EXPECT_EQ(by_fine_tune->choice, Choice::kFineTune);
  auto by_validation = parse_job_options(R"({"method": "best-of", "choice": "validation"})", JobKind::kDistill);
  ASSERT_TRUE(by_validation.is_ok()) << by_validation.status().to_string();
  EXPECT_EQ(by_validation->choice, Choice::kValidation);
  auto by_adapter = parse_job_options(R"({"method": "best-of", "choice": "adapter"})", JobKind::kDistill);
  ASSERT_TRUE(by_adapter.is_ok()) << by_adapter.status().to_string();
  EXPECT_EQ(by_adapter->choice, Choice::kAdapter);
  auto on_student = parse_job_options(R"({"method": "best-of", "choice": "adapter-on-student"})", JobKind::kDistill);
  ASSERT_TRUE(on_student.is_ok()) << on_student.status().to_string();
  EXPECT_EQ(on_student->choice, Choice::kAdapterOnStudent);
  auto unknown = parse_job_options(R"({"method": "best-of", "choice": "best"})", JobKind::kDistill);
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find(
                "'choice' must be \"fine-tune\", \"validation\", \"soup\", \"adapter\" or \"adapter-on-student\""),
            std::string::npos)
      << unknown.status().to_string();
  // The other methods choose nothing, and say so.
  auto with_adapter = parse_job_options(R"({"method": "adapter", "choice": "validation"})", JobKind::kDistill);
  ASSERT_FALSE(with_adapter.is_ok());
  EXPECT_NE(with_adapter.status().message().find("belongs to \"method\": \"best-of\""), std::string::npos)
      << with_adapter.status().to_string();
  EXPECT_FALSE(parse_job_options(R"({"method": "student", "choice": "fine-tune"})", JobKind::kDistill).is_ok());
  EXPECT_FALSE(parse_job_options(R"({"choice": "fine-tune"})", JobKind::kTrain).is_ok());
}

TEST(JobOptionsTest, KeepsEveryValue) {
  auto o = parse_job_options(R"({"epochs": 4, "min_steps": 200, "validation_fraction": 0.2, "validation_by": "tasks",
                                 "patience": 20, "refit": true, "auto_schedule": true, "seed": 7, "model": "mlp",
                                 "init": "production", "time_budget_s": 30, "eval_fraction": 0.2,
                                 "max_records": 5000, "learning_rate": 0.001})",
                             JobKind::kTrain);
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  EXPECT_EQ(o->epochs, 4);
  EXPECT_EQ(o->min_steps, 200);
  EXPECT_EQ(o->validation_fraction, 0.2);
  EXPECT_TRUE(o->validation_by_tasks);
  EXPECT_EQ(o->patience, 20);
  EXPECT_TRUE(o->refit);
  EXPECT_TRUE(o->auto_schedule);
  EXPECT_EQ(o->seed, 7u);
  EXPECT_EQ(o->model, "mlp");
  EXPECT_EQ(o->init, "production");
  EXPECT_EQ(o->time_budget_s, 30);
  EXPECT_EQ(o->eval_fraction, 0.2);
  EXPECT_EQ(o->max_records, 5000);
  EXPECT_EQ(o->learning_rate, 0.001);
  auto d = parse_job_options(
      R"({"method": "student", "ewc_weight": 0.5, "margin": 0.02, "column_epochs": 2, "unlabeled_ratio": 0,
                                 "old_bank_ratio": 0.5, "max_old_bank": 20000, "learning_rate": 0.004})",
      JobKind::kDistill);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(d->ewc_weight, 0.5);
  EXPECT_EQ(d->margin, 0.02);
  EXPECT_EQ(d->column_epochs, 2);
  EXPECT_EQ(d->unlabeled_ratio, 0);
  EXPECT_EQ(d->old_bank_ratio, 0.5);
  EXPECT_EQ(d->max_old_bank, 20000);
  EXPECT_EQ(d->learning_rate, 0.004);
  auto a = parse_job_options(R"({"method": "adapter", "adapter_rank": 16, "adapter_layers": "blocks", "epochs": 6,
                                 "learning_rate": 0.02})",
                             JobKind::kDistill);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->adapter_rank, 16);
  EXPECT_EQ(a->adapter_layers, trainer::AdapterLayers::kBlocks);
  EXPECT_EQ(a->epochs, 6);
  EXPECT_EQ(a->learning_rate, 0.02);
  // The method may come after the options it allows.
  auto late = parse_job_options(R"({"ewc_weight": 0.5, "column_epochs": 2, "method": "student"})", JobKind::kDistill);
  ASSERT_TRUE(late.is_ok()) << late.status().to_string();
  EXPECT_EQ(late->ewc_weight, 0.5);
  EXPECT_EQ(late->column_epochs, 2);
  EXPECT_EQ(late->epochs, 12);  // the student's default
}

// The cap on training programs follows the train device unless the job names
// one: every program on CUDA (0), the CPU's 100,000 otherwise.
TEST(JobOptionsTest, MaxRecordsDefaultFollowsTheTrainDevice) {
  auto unset = parse_job_options("{}", JobKind::kTrain);
  ASSERT_TRUE(unset.is_ok());
  EXPECT_EQ(unset->max_records, 0);
  EXPECT_EQ(effective_max_records(*unset, trainer::Device::kCpu), 100'000);
  EXPECT_EQ(effective_max_records(*unset, trainer::Device::kCuda), 0);
  auto given = parse_job_options(R"({"max_records": 5000})", JobKind::kDistill);
  ASSERT_TRUE(given.is_ok());
  EXPECT_EQ(effective_max_records(*given, trainer::Device::kCpu), 5000);
  EXPECT_EQ(effective_max_records(*given, trainer::Device::kCuda), 5000);
}

// Each refusal is kInvalidArgument and names the option at fault.
TEST(JobOptionsTest, RefusesBadOptionsNamingThem) {
  const struct {
    const char* text;
    JobKind kind;
    const char* named;
  } cases[] = {
      {R"({"epochz": 2})", JobKind::kTrain, "epochz"},
      {R"({"epochs": 0})", JobKind::kTrain, "epochs"},
      {R"({"epochs": "6"})", JobKind::kTrain, "epochs"},
      {R"({"min_steps": -1})", JobKind::kDistill, "min_steps"},
      {R"({"learning_rate": 0})", JobKind::kDistill, "learning_rate"},
      {R"({"learning_rate": 2})", JobKind::kTrain, "learning_rate"},
      {R"({"validation_fraction": 0.9})", JobKind::kTrain, "validation_fraction"},
      {R"({"validation_by": "rows"})", JobKind::kTrain, "validation_by"},
      {R"({"refit": 1})", JobKind::kTrain, "refit"},
      {R"({"auto_schedule": "yes"})", JobKind::kDistill, "auto_schedule"},
      {R"({"ewc_weight": -1})", JobKind::kDistill, "ewc_weight"},
      {R"({"ewc_weight": 1, "method": "adapter"})", JobKind::kDistill, "ewc_weight"},  // the student's
      {R"({"column_epochs": 2, "method": "adapter"})", JobKind::kDistill, "column_epochs"},
      {R"({"method": "student", "adapter_rank": 8})", JobKind::kDistill, "adapter_rank"},  // the adapter's
      {R"({"adapter_rank": 0})", JobKind::kDistill, "adapter_rank"},
      {R"({"adapter_rank": 65})", JobKind::kDistill, "adapter_rank"},
      {R"({"adapter_layers": "heads"})", JobKind::kDistill, "adapter_layers"},
      {R"({"method": "lora"})", JobKind::kDistill, "method"},
      {R"({"method": "adapter"})", JobKind::kTrain, "method"},          // distill only
      {R"({"margin": 0.1})", JobKind::kTrain, "margin"},                // distill only
      {R"({"old_bank_ratio": 1})", JobKind::kTrain, "old_bank_ratio"},  // distill only
      {R"({"old_bank_ratio": -1, "method": "student"})", JobKind::kDistill, "old_bank_ratio"},
      {R"({"max_old_bank": 1.5, "method": "student"})", JobKind::kDistill, "max_old_bank"},
      {R"({"init": "production"})", JobKind::kDistill, "init"},  // train only
      {R"({"init": ""})", JobKind::kTrain, "init"},
      {R"({"model": "gpt"})", JobKind::kTrain, "model"},
      {R"({"epochs": 2.5})", JobKind::kTrain, "epochs"},                 // whole numbers only
      {R"({"auto_schedule": true})", JobKind::kTrain, "auto_schedule"},  // needs init on a train job
  };
  for (const auto& c : cases) {
    auto o = parse_job_options(c.text, c.kind);
    ASSERT_FALSE(o.is_ok()) << c.text;
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(o.status().message().find(c.named), std::string::npos) << c.text << ": " << o.status().to_string();
  }
  EXPECT_NE(parse_job_options(R"({"validation_fraction": 0.9})", JobKind::kTrain).status().message().find("[0, 0.5]"),
            std::string::npos);  // bounds as written in the API document
  EXPECT_NE(parse_job_options(R"({"method": "adapter", "ewc_weight": 1})", JobKind::kDistill)
                .status()
                .message()
                .find("add \"method\": \"student\""),
            std::string::npos);  // says how to mend it
  EXPECT_FALSE(parse_job_options("[1, 2]", JobKind::kTrain).is_ok());
  EXPECT_FALSE(parse_job_options("not json", JobKind::kTrain).is_ok());
}

}  // namespace
}  // namespace tcl::onboarding
