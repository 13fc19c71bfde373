// tests/trainer/train_job_test.cc — train_platform on a small synthetic
// platform whose costs follow a planted rule on the steps: the loss falls and
// held-out tasks rank above the random floor; the callback and the cancel
// flag cancel (kCancelled); the time budget stops training; the same seed
// gives the same checkpoint bytes. Torch-free, as the daemon's worker uses it.
#include "trainer/train_job.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <variant>
#include <cmath>
#include <string>
#include <vector>

#include "trainer/batches.h"
#include "trainer/cost_model.h"
#include "trainer/distill_loss.h"
#include "trainer/score_model.h"

namespace tcl::trainer {
namespace {

constexpr const char* kTarget = "llvm -keys=cpu -mtriple=x86_64-linux-gnu -num-cores=8";

// Task t, program p: split the loop by tile 2^(p % 8) and annotate the inner
// loop (none / unroll / vectorize by p / 8 % 3). The cost is the task's base
// times a planted rule: tile 16 is best, vectorize beats unroll beats none.
core::Record planted(int t, int p) {
  core::Record r;
  r.workload_key = "[\"planted\", " + std::to_string(t) + "]";
  r.target = kTarget;
  const int log_tile = p % 8;
  const int annotation = (p / 8) % 3;  // 0 none, 1 unroll, 2 vectorize
  core::Step sp;
  sp.kind = core::StepKind::kSplit;
  sp.extent = 256;
  sp.lengths = {std::int64_t{1} << log_tile};
  sp.inner_to_outer = true;
  core::Step an;
  an.kind = core::StepKind::kAnnotation;
  an.iter_id = 1;
  an.annotation = annotation;
  core::Step ca;
  ca.kind = core::StepKind::kComputeAt;
  ca.stage_id = 1;
  ca.target_iter_id = t % 3;
  r.steps = {sp, an, ca};
  const double rule = (1.0 + 0.4 * std::abs(log_tile - 4)) * (annotation == 2 ? 0.6 : annotation == 1 ? 0.8 : 1.0);
  const double noise = 1.0 + 0.01 * ((t * 31 + p * 17) % 7);
  const double cost = 1e-3 * (1 + t % 5) * rule * noise;
  r.costs = {cost};
  r.version = "v0.6";
  return r;
}

std::vector<core::Record> planted_platform(int tasks, int per_task) {
  std::vector<core::Record> out;
  for (int t = 0; t < tasks; ++t) {
    for (int p = 0; p < per_task; ++p) out.push_back(planted(t, p));
  }
  core::Record failed = planted(0, 0);
  failed.error_no = 7;  // a failed measurement rides along and is left out
  out.push_back(failed);
  return out;
}

TrainRequest small_request(const std::vector<core::Record>& records) {
  TrainRequest r;
  r.data.records = records;
  r.data.platform = Platform{kTarget, std::nullopt};
  r.data.options.eval_fraction = 0.25;
  r.data.options.split_salt = 1;
  r.model.d_model = 16;
  r.model.d_state = 4;
  r.model.film_hidden = 16;
  r.model.head_hidden = 16;
  r.model.dropout = 0.0;
  r.optimisation.epochs = 12;
  r.optimisation.group_size = 24;
  r.optimisation.groups_per_batch = 4;
  r.optimisation.learning_rate = 5e-3;
  r.optimisation.seed = 11;
  r.resources.threads = 1;        // the box is shared
  r.resources.time_budget_s = 0;  // no clock in the schedule: runs are reproducible
  r.data.options.max_eval_records = 0;
  return r;
}

TEST(TrainJobTest, LowersLossAndRanksHeldOutTasks) {
  const std::vector<core::Record> records = planted_platform(24, 48);
  TrainRequest req = small_request(records);
  int calls = 0;
  auto result = train_platform(req, [&](int epoch, int, double loss, double val_top1) {
    EXPECT_EQ(epoch, ++calls);
    EXPECT_TRUE(std::isfinite(loss));
    EXPECT_TRUE(std::isfinite(val_top1));
    return true;
  });
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  const TrainResult& r = *result;
  EXPECT_EQ(calls, 12);
  EXPECT_EQ(r.epochs_done, 12);
  ASSERT_EQ(r.epoch_losses.size(), 12u);
  std::printf("[ train ] loss %.4f -> %.4f, %lld steps, top-1 mean %.3f (floor %.3f), pairwise %.3f, %.2f s\n",
              r.epoch_losses.front(), r.epoch_losses.back(), static_cast<long long>(r.steps), r.metrics.top1.mean_ratio,
              r.metrics.random_top1.mean_ratio, r.metrics.pairwise_accuracy, r.wall_s);
  EXPECT_LT(r.epoch_losses.back(), 0.6 * r.epoch_losses.front());
  EXPECT_FALSE(r.budget_exhausted);
  EXPECT_EQ(r.device, cuda_available() ? Device::kCuda : Device::kCpu);  // request.device = auto

  // Data summary: the failed record is counted and left out; tasks split whole.
  EXPECT_EQ(r.data.records, 24 * 48 + 1);
  EXPECT_EQ(r.data.failed, 1);
  EXPECT_EQ(r.data.tasks, 24);
  EXPECT_EQ(r.data.train_tasks + r.data.eval_tasks, 24);
  EXPECT_GT(r.data.eval_tasks, 0);
  EXPECT_EQ(r.metrics.tasks, r.data.eval_tasks);
  EXPECT_EQ(r.metrics.programs, r.data.eval_records);

  // Held-out tasks: far above the random floor.
  EXPECT_GT(r.metrics.pairwise_accuracy, 0.85);
  EXPECT_GT(r.metrics.top1.mean_ratio, r.metrics.random_top1.mean_ratio + 0.2);
  EXPECT_GT(r.metrics.top5.mean_ratio, 0.9);

  // The checkpoint is a CostModel with the data's shapes.
  auto loaded = CostModel::load(r.checkpoint);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ((*loaded)->num_parameters(), r.num_parameters);
  EXPECT_EQ((*loaded)->config().token_dim, core::kTokenDim);
  EXPECT_EQ((*loaded)->config().descriptor_dim, core::kHardwareDim);
  EXPECT_EQ(r.config.seed, 11u);
}

// A checkpoint that reads tokens of 7 floats: no dataset fits it.
std::string narrow_checkpoint() {
  ModelConfig narrow;
  narrow.token_dim = 7;
  narrow.descriptor_dim = core::kHardwareDim;
  auto model = CostModel::create(narrow);
  EXPECT_TRUE(model.is_ok());
  return model.is_ok() ? *(*model)->save() : std::string();
}

// Fine-tuning from a checkpoint (the active column): it starts where the
// checkpoint ends (a lower first-epoch loss than a fresh start), keeps the
// checkpoint's config, and refuses one whose shapes do not fit the data.
TEST(TrainJobTest, FineTunesFromACheckpoint) {
  const std::vector<core::Record> records = planted_platform(24, 48);
  TrainRequest base = small_request(records);
  base.optimisation.epochs = 6;
  auto first = train_platform(base, nullptr);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();

  TrainRequest tune = small_request(records);
  tune.optimisation.epochs = 2;
  tune.model.d_model = 32;  // ignored: the checkpoint's config wins
  tune.start = FineTune{.init_checkpoint = first->checkpoint};
  auto tuned = train_platform(tune, nullptr);
  ASSERT_TRUE(tuned.is_ok()) << tuned.status().to_string();
  EXPECT_EQ(tuned->config.d_model, 16);
  EXPECT_EQ(tuned->num_parameters, first->num_parameters);
  EXPECT_NE(tuned->checkpoint, first->checkpoint);

  TrainRequest fresh = small_request(records);
  fresh.optimisation.epochs = 2;
  auto scratch = train_platform(fresh, nullptr);
  ASSERT_TRUE(scratch.is_ok());
  EXPECT_LT(tuned->epoch_losses.front(), 0.8 * scratch->epoch_losses.front());
  EXPECT_GE(tuned->metrics.pairwise_accuracy, first->metrics.pairwise_accuracy - 0.05);

  TrainRequest bad = small_request(records);
  bad.start = FineTune{.init_checkpoint = "not a checkpoint"};
  EXPECT_EQ(train_platform(bad, nullptr).status().code(), StatusCode::kDataLoss);
  const std::string other_bytes = narrow_checkpoint();
  bad.start = FineTune{.init_checkpoint = other_bytes};
  auto refused = train_platform(bad, nullptr);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("init_checkpoint"), std::string::npos) << refused.status().to_string();
}

// A fine-tune through a per-platform adapter (FineTune::adapter) writes a
// plain checkpoint in which only the adapted weights moved: every other
// tensor is the init checkpoint's, bit for bit, also through the weight
// average, the validation split's best epoch and the refit.
class AdapterFineTuneTest : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(Plain, AdapterFineTuneTest, ::testing::Values(false));
INSTANTIATE_TEST_SUITE_P(AveragedValidatedRefitted, AdapterFineTuneTest, ::testing::Values(true));

TEST_P(AdapterFineTuneTest, MovesOnlyTheAdaptedWeights) {
  const std::vector<core::Record> records = planted_platform(24, 48);
  TrainRequest base = small_request(records);
  base.optimisation.epochs = 3;
  auto first = train_platform(base, nullptr);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();

  TrainRequest tune = small_request(records);
  tune.optimisation.epochs = 2;
  if (GetParam()) {
    tune.optimisation.epochs = 4;
    tune.optimisation.ema_decay = 0.9;
    tune.optimisation.patience = 1;
    tune.data.options.validation_fraction = 0.25;
    tune.data.refit = true;
  }
  FineTune adapter{.init_checkpoint = first->checkpoint};
  adapter.adapter = {.rank = 2, .layers = AdapterLayers::kBlocks};
  tune.start = adapter;
  auto tuned = train_platform(tune, nullptr);
  ASSERT_TRUE(tuned.is_ok()) << tuned.status().to_string();
  // in_proj 16 → 64 and out_proj 32 → 16 in each of the 2 blocks, rank 2.
  EXPECT_EQ(tuned->adapter_parameters, 2 * 2 * ((16 + 64) + (32 + 16)));
  EXPECT_EQ(tuned->num_parameters, first->num_parameters);
  if (!GetParam()) {  // a refit may run one epoch
    EXPECT_LT(tuned->epoch_losses.back(), tuned->epoch_losses.front());
  } else {  // the paths this arm is for did run
    EXPECT_TRUE(tuned->refitted);
    EXPECT_GT(tuned->best_epoch, 0);
    EXPECT_FALSE(tuned->epoch_validation.empty());
  }

  auto before = load_score_model(first->checkpoint);
  auto after = load_score_model(tuned->checkpoint);
  ASSERT_TRUE(before.is_ok() && after.is_ok());
  const auto old_params = (*before)->named_parameters();
  int moved = 0;
  for (const auto& item : (*after)->named_parameters()) {
    const std::string& name = item.key();
    const bool adapted =
        name.find(".in_proj.weight") != std::string::npos || name.find(".out_proj.weight") != std::string::npos;
    const bool same = torch::equal(item.value(), old_params[name]);
    EXPECT_EQ(same, !adapted) << name;
    moved += same ? 0 : 1;
  }
  EXPECT_EQ(moved, 4);
  // The adapter alone, kept with the trunk for a platform: that platform's
  // model is the folded checkpoint, weight for weight.
  ASSERT_FALSE(tuned->adapter.empty());
  EXPECT_TRUE(first->adapter.empty());
  auto kept = attach_adapter(first->checkpoint, "planted", tuned->adapter);
  ASSERT_TRUE(kept.is_ok()) << kept.status().to_string();
  auto platform_model = CostModel::load_for_platform(*kept, "planted");
  ASSERT_TRUE(platform_model.is_ok()) << platform_model.status().to_string();
  const auto folded_params = (*after)->named_parameters();
  for (const auto& item : (*platform_model)->score_model()->named_parameters()) {
    EXPECT_TRUE(torch::equal(item.value(), folded_params[item.key()])) << item.key();  // both folded on the CPU
  }

  TrainRequest bad = small_request(records);
  FineTune no_init{};
  no_init.adapter.rank = 2;  // nothing to adapt: refused, not a whole model trained
  bad.start = no_init;
  EXPECT_EQ(train_platform(bad, nullptr).status().code(), StatusCode::kInvalidArgument);
  FineTune too_wide{.init_checkpoint = first->checkpoint};
  too_wide.adapter.rank = kMaxAdapterRank + 1;
  bad.start = too_wide;
  EXPECT_EQ(train_platform(bad, nullptr).status().code(), StatusCode::kInvalidArgument);
  Distill distill{.teacher = {.init_checkpoint = first->checkpoint}};
  distill.teacher.adapter.rank = 2;
  bad.start = distill;
  auto refused = train_platform(bad, nullptr);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("adapter"), std::string::npos) << refused.status().to_string();
}

TEST(TrainJobTest, CallbackCancels) {
  const std::vector<core::Record> records = planted_platform(8, 16);
  TrainRequest req = small_request(records);
  int calls = 0;
  auto result = train_platform(req, [&](int, int, double, double) { return ++calls < 2; });
  EXPECT_EQ(result.status().code(), StatusCode::kCancelled) << result.status().to_string();
  EXPECT_EQ(calls, 2);

  std::atomic<bool> cancel{true};
  req.resources.cancel = &cancel;
  EXPECT_EQ(train_platform(req).status().code(), StatusCode::kCancelled);
}

TEST(TrainJobTest, TimeBudgetStopsTraining) {
  const std::vector<core::Record> records = planted_platform(8, 16);
  TrainRequest req = small_request(records);
  req.optimisation.epochs = 1'000'000;
  req.resources.time_budget_s = 0.5;
  auto result = train_platform(req);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_TRUE(result->budget_exhausted);
  EXPECT_LT(result->epochs_done, 1'000'000);
  EXPECT_GT(result->steps, 0);
  EXPECT_LT(result->wall_s, 5.0);
  EXPECT_FALSE(result->checkpoint.empty());
}

// After the last epoch the call says what it does, each phase with its own
// count: the eval split scored, the Fisher's batches, the checkpoint.
TEST(TrainJobTest, ReportsThePhasesAfterTheEpochs) {
  const std::vector<core::Record> records = planted_platform(24, 48);
  TrainRequest req = small_request(records);
  req.optimisation.epochs = 2;
  std::vector<std::string> trace;
  req.resources.phase = [&](const PhaseProgress& p) {
    trace.push_back(std::string(p.phase) + " " + std::to_string(p.done) + "/" + std::to_string(p.total) + " " +
                    std::string(p.unit));
  };
  auto result = train_platform(req, [&](int epoch, int epochs, double, double) {
    trace.push_back("epoch " + std::to_string(epoch) + "/" + std::to_string(epochs));
    return true;
  });
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  const std::int64_t eval = result->metrics.programs;
  ASSERT_GT(eval, 256);  // more than one chunk: a step between 0 and the end
  // Phases in order, each from 0 to its total, after the last epoch.
  std::vector<std::string> kinds;
  for (const std::string& t : trace) {
    const std::string kind = t.substr(0, t.find(' '));
    if (kinds.empty() || kinds.back() != kind) kinds.push_back(kind);
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"epoch", "evaluating", "fisher", "saving"}));
  const auto at = [&](const std::string& line) { return std::find(trace.begin(), trace.end(), line) - trace.begin(); };
  const std::string all_eval = std::to_string(eval) + "/" + std::to_string(eval);
  EXPECT_LT(at("epoch 2/2"), at("evaluating 0/" + std::to_string(eval) + " programs"));
  EXPECT_LT(at("evaluating 256/" + std::to_string(eval) + " programs"), at("evaluating " + all_eval + " programs"));
  EXPECT_LT(at("evaluating " + all_eval + " programs"), static_cast<std::ptrdiff_t>(trace.size()));
  std::int64_t fisher_total = 0;
  for (const std::string& t : trace) {
    if (t.rfind("fisher 0/", 0) == 0) fisher_total = std::stoll(t.substr(9));
  }
  ASSERT_GT(fisher_total, 1);
  const std::string fisher_end =
      "fisher " + std::to_string(fisher_total) + "/" + std::to_string(fisher_total) + " batches";
  EXPECT_LT(at("fisher 1/" + std::to_string(fisher_total) + " batches"), at(fisher_end));
  EXPECT_LT(at(fisher_end), at("saving 0/1 checkpoints"));
  EXPECT_EQ(trace.back(), "saving 1/1 checkpoints");
  EXPECT_FALSE(result->fisher.empty());
}

// min_steps: a small set trains for more epochs, reported to the callback.
TEST(TrainJobTest, MinStepsAddsEpochsToSmallSets) {
  const std::vector<core::Record> records = planted_platform(8, 16);
  TrainRequest req = small_request(records);
  req.optimisation.epochs = 1;
  auto one = train_platform(req);
  ASSERT_TRUE(one.is_ok()) << one.status().to_string();
  ASSERT_EQ(one->epochs_done, 1);
  const std::int64_t per_epoch = one->steps;
  req.optimisation.min_steps = 3 * per_epoch + 1;
  int last_epoch = 0, planned = 0;
  auto more = train_platform(req, [&](int epoch, int epochs, double, double) {
    last_epoch = epoch;
    planned = epochs;
    return true;
  });
  ASSERT_TRUE(more.is_ok()) << more.status().to_string();
  EXPECT_EQ(more->epochs_done, 4);
  EXPECT_EQ(more->epochs_planned, 4);
  EXPECT_EQ(planned, 4);
  EXPECT_EQ(last_epoch, 4);
  EXPECT_GE(more->steps, req.optimisation.min_steps);
  req.optimisation.min_steps = per_epoch;  // no more than one epoch gives: no change
  auto same = train_platform(req);
  ASSERT_TRUE(same.is_ok());
  EXPECT_EQ(same->checkpoint, one->checkpoint);
  req.optimisation.min_steps = -1;
  EXPECT_EQ(train_platform(req).status().code(), StatusCode::kInvalidArgument);
}

// A run that scores a validation split after every epoch: no eval split, and
// a learning rate high enough for a jumpy run (the best epoch is not the last).
TrainRequest validated_request(const std::vector<core::Record>& records, double fraction, ValidationSplit split,
                               std::uint64_t sample_seed, int epochs) {
  TrainRequest req = small_request(records);
  req.data.options.eval_fraction = 0;
  req.data.options.validation_fraction = fraction;
  req.data.options.validation_split = split;
  req.data.options.sample_seed = sample_seed;
  req.optimisation.epochs = epochs;
  req.optimisation.learning_rate = 2e-2;
  return req;
}

// Early stopping: every epoch is scored on the validation share, the call
// returns the best epoch's weights (ties to the earlier), and `patience`
// stops training once that many epochs in a row did not beat it.
TEST(TrainJobTest, EarlyStoppingKeepsTheBestValidationEpoch) {
  const std::vector<core::Record> records = planted_platform(8, 32);
  TrainRequest req = validated_request(records, 0.25, ValidationSplit::kPrograms, 3, 16);
  auto full = train_platform(req);
  ASSERT_TRUE(full.is_ok()) << full.status().to_string();
  EXPECT_EQ(full->epochs_done, 16);
  ASSERT_EQ(full->epoch_validation.size(), 16u);
  EXPECT_EQ(full->data.validation_records, 8 * 8);
  EXPECT_EQ(full->data.train_records, 8 * 24);
  int best = 1;
  for (int e = 2; e <= 16; ++e) {
    if (full->epoch_validation[e - 1].top1.mean_ratio > full->epoch_validation[best - 1].top1.mean_ratio) best = e;
  }
  EXPECT_EQ(full->best_epoch, best);
  ASSERT_LT(best, 16) << "the planted run should peak before its last epoch, or the restore goes untested";
  EXPECT_EQ(full->validation.top1.mean_ratio, full->epoch_validation[best - 1].top1.mean_ratio);

  // The checkpoint holds the best epoch's weights: it scores the validation
  // programs as that epoch did.
  auto ds = build_dataset(records, req.data.platform, req.data.options);
  ASSERT_TRUE(ds.is_ok());
  auto model = CostModel::load(full->checkpoint);
  ASSERT_TRUE(model.is_ok());
  const DatasetSplit& v = ds->validation;
  std::vector<float> scores(static_cast<std::size_t>(v.count));
  ASSERT_TRUE((*model)->predict({v.count, ds->seq_len, v.tokens, v.lengths, ds->descriptor}, scores).is_ok());
  const RankingMetrics kept = evaluate_ranking(v.groups, v.latencies, scores);
  EXPECT_NEAR(kept.top1.mean_ratio, full->validation.top1.mean_ratio, 1e-6);
  EXPECT_NEAR(kept.pairwise_accuracy, full->validation.pairwise_accuracy, 1e-6);

  // Patience 2 stops at the first epoch two past the best so far; the epochs
  // it ran match the full run's.
  int expected_best = 1, expected_done = 16;
  for (int e = 2; e <= 16; ++e) {
    if (full->epoch_validation[e - 1].top1.mean_ratio > full->epoch_validation[expected_best - 1].top1.mean_ratio) {
      expected_best = e;
    } else if (e - expected_best >= 2) {
      expected_done = e;
      break;
    }
  }
  req.optimisation.patience = 2;
  auto patient = train_platform(req);
  ASSERT_TRUE(patient.is_ok());
  EXPECT_EQ(patient->best_epoch, expected_best);
  EXPECT_EQ(patient->epochs_done, expected_done);
  ASSERT_LT(expected_done, 16) << "patience should cut this run short";
  for (int e = 1; e <= expected_done; ++e) {
    EXPECT_EQ(patient->epoch_validation[e - 1].top1.mean_ratio, full->epoch_validation[e - 1].top1.mean_ratio);
  }

  // No validation share: nothing scored, the last epoch's weights.
  req.data.options.validation_fraction = 0;
  req.optimisation.patience = 0;
  auto plain = train_platform(req);
  ASSERT_TRUE(plain.is_ok());
  EXPECT_EQ(plain->best_epoch, 0);
  EXPECT_TRUE(plain->epoch_validation.empty());
  req.optimisation.patience = -1;
  EXPECT_EQ(train_platform(req).status().code(), StatusCode::kInvalidArgument);
}

// Refit: the epochs chosen on a validation split of whole tasks, then the
// same start and schedule on every program, cut there.
TEST(TrainJobTest, RefitTrainsOnEveryProgramForTheBestEpochs) {
  const std::vector<core::Record> records = planted_platform(12, 24);
  TrainRequest req = validated_request(records, 0.3, ValidationSplit::kTasks, 4, 8);
  auto chosen = train_platform(req);
  ASSERT_TRUE(chosen.is_ok()) << chosen.status().to_string();
  ASSERT_GT(chosen->data.validation_tasks, 0);
  EXPECT_FALSE(chosen->refitted);
  req.data.refit = true;
  int callbacks = 0, last_epoch = 0, last_planned = 0;
  auto refit = train_platform(req, [&](int epoch, int epochs, double, double) {
    EXPECT_EQ(epoch, last_epoch + 1);  // the refit's epochs follow the first run's
    last_epoch = epoch;
    last_planned = epochs;
    return ++callbacks > 0;
  });
  ASSERT_TRUE(refit.is_ok()) << refit.status().to_string();
  EXPECT_TRUE(refit->refitted);
  EXPECT_EQ(refit->best_epoch, chosen->best_epoch);
  EXPECT_EQ(refit->epochs_done, chosen->best_epoch);
  EXPECT_EQ(refit->epochs_planned, 8);
  EXPECT_EQ(refit->epoch_validation.size(), 8u);
  EXPECT_EQ(refit->data.train_records, 12 * 24);  // validation tasks included
  EXPECT_EQ(refit->data.validation_records, 0);
  EXPECT_EQ(callbacks, 8 + chosen->best_epoch);  // both runs report
  EXPECT_EQ(last_planned, last_epoch);
  // Exactly the run that the refit describes.
  TrainRequest direct = validated_request(records, 0, ValidationSplit::kPrograms, 4, 8);
  direct.optimisation.stop_after_epochs = chosen->best_epoch;
  auto same = train_platform(direct);
  ASSERT_TRUE(same.is_ok());
  EXPECT_EQ(same->epochs_done, chosen->best_epoch);
  EXPECT_EQ(same->checkpoint, refit->checkpoint);
}

// The schedule from the data: a checkpoint that orders the new records'
// pairs better than a coin keeps the request's schedule; one that does worse (here
// a platform whose costs invert the planted rule) gets the long schedule,
// exactly as if its floors had been set by hand.
TEST(TrainJobTest, AutoScheduleLengthensFineTuningOnlyForAFarPlatform) {
  const std::vector<core::Record> records = planted_platform(8, 32);
  TrainRequest base_req = small_request(records);
  base_req.optimisation.epochs = 6;
  auto base = train_platform(base_req);
  ASSERT_TRUE(base.is_ok()) << base.status().to_string();

  std::vector<core::Record> inverted = records;
  for (core::Record& r : inverted) r.costs = {1e-6 / r.costs[0]};

  const auto tune_request = [&](const std::vector<core::Record>& data) {
    TrainRequest t = validated_request(data, 0, ValidationSplit::kPrograms, 5, 3);
    // small floors: a unit test's budget
    t.start = FineTune{.init_checkpoint = base->checkpoint, .long_schedule = {0.25, 40, 2}};
    return t;
  };

  // Near: the request as set, to the byte.
  TrainRequest near = tune_request(records);
  std::get<FineTune>(near.start).auto_schedule = true;
  auto near_run = train_platform(near);
  ASSERT_TRUE(near_run.is_ok()) << near_run.status().to_string();
  EXPECT_FALSE(near_run->long_schedule_used);
  EXPECT_GT(near_run->zero_shot.pairwise_accuracy, 0.5);
  EXPECT_EQ(near_run->zero_shot.programs, 8 * 32);  // every labeled program, validation share included
  EXPECT_EQ(near_run->best_epoch, 0);
  auto as_set = train_platform(tune_request(records));
  ASSERT_TRUE(as_set.is_ok());
  EXPECT_EQ(near_run->checkpoint, as_set->checkpoint);

  // Far: the long schedule's floors, to the byte.
  TrainRequest far = tune_request(inverted);
  std::get<FineTune>(far.start).auto_schedule = true;
  auto far_run = train_platform(far);
  ASSERT_TRUE(far_run.is_ok()) << far_run.status().to_string();
  EXPECT_TRUE(far_run->long_schedule_used);
  EXPECT_LT(far_run->zero_shot.pairwise_accuracy, 0.5);
  EXPECT_GT(far_run->best_epoch, 0);
  EXPECT_EQ(far_run->data.validation_records, 8 * 8);
  EXPECT_GT(far_run->epochs_planned, 3);  // min_steps lengthened the 3 epochs asked
  TrainRequest by_hand = tune_request(inverted);
  by_hand.data.options.validation_fraction = 0.25;
  by_hand.optimisation.min_steps = 40;
  by_hand.optimisation.patience = 2;
  auto long_run = train_platform(by_hand);
  ASSERT_TRUE(long_run.is_ok());
  EXPECT_EQ(far_run->checkpoint, long_run->checkpoint);
  EXPECT_EQ(far_run->epochs_done, long_run->epochs_done);

  // zero_shot_fit is what the decision saw.
  auto fit = zero_shot_fit(far, base->checkpoint);
  ASSERT_TRUE(fit.is_ok());
  EXPECT_EQ(fit->pairwise_accuracy, far_run->zero_shot.pairwise_accuracy);
  EXPECT_EQ(fit->top1.mean_ratio, far_run->zero_shot.top1.mean_ratio);

  // A start that cannot read the data is refused as such, before any scoring.
  const std::string other_bytes = narrow_checkpoint();
  TrainRequest mismatch = tune_request(records);
  mismatch.start = FineTune{.init_checkpoint = other_bytes, .auto_schedule = true};
  auto refused = train_platform(mismatch);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("init_checkpoint"), std::string::npos) << refused.status().to_string();
}

TEST(TrainJobTest, SameSeedSameCheckpoint) {
  const std::vector<core::Record> records = planted_platform(8, 16);
  TrainRequest req = small_request(records);
  req.optimisation.epochs = 3;
  req.model.dropout = 0.1;  // the dropout stream is seeded too
  auto a = train_platform(req);
  auto b = train_platform(req);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_TRUE(a->checkpoint == b->checkpoint);
  EXPECT_EQ(a->epoch_losses, b->epoch_losses);
  req.optimisation.seed = 12;
  auto c = train_platform(req);
  ASSERT_TRUE(c.is_ok());
  EXPECT_FALSE(a->checkpoint == c->checkpoint);
}

// A time budget the run keeps well inside leaves the schedule to the steps:
// the same bytes as no budget at all. (The clock's share at the first step,
// a few milliseconds of the budget, once nudged step 0's learning rate, so
// two runs of one budgeted job differed.)
TEST(TrainJobTest, ABudgetThatDoesNotBindChangesNothing) {
  const std::vector<core::Record> records = planted_platform(8, 16);
  TrainRequest req = small_request(records);
  req.optimisation.epochs = 3;
  req.optimisation.warmup_fraction = 0.5;  // step 0's rate is in the warm-up, where t moves it
  auto unbounded = train_platform(req);
  req.resources.time_budget_s = 30;
  auto budgeted = train_platform(req);
  ASSERT_TRUE(unbounded.is_ok() && budgeted.is_ok());
  EXPECT_FALSE(budgeted->budget_exhausted);
  EXPECT_EQ(unbounded->epoch_losses, budgeted->epoch_losses);
  EXPECT_TRUE(unbounded->checkpoint == budgeted->checkpoint);
}

TEST(TrainJobTest, PrebuiltTlpDatasetSetsShapes) {
  const std::vector<core::Record> records = planted_platform(8, 16);
  DatasetOptions o;
  o.encoding = TokenEncoding::kTlp;
  auto ds = build_dataset(records, Platform{kTarget, std::nullopt}, o);
  ASSERT_TRUE(ds.is_ok());
  const TrainRequest like = small_request({});
  DatasetTrainRequest req{
      .dataset = &*ds, .model = like.model, .optimisation = like.optimisation, .resources = like.resources};
  req.model.kind = ModelKind::kAttention;
  req.optimisation.epochs = 1;
  auto result = train_platform(req);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(result->encoding, TokenEncoding::kTlp);
  EXPECT_EQ(result->config.max_len, core::kTlpCpu.seq_len);
  EXPECT_EQ(result->config.token_dim, core::kTlpCpu.emb_size);
  EXPECT_EQ(result->metrics.tasks, 0);  // no eval split requested
  EXPECT_EQ(result->dataset_s, 0.0);
}

TEST(TrainJobTest, BadRequests) {
  const std::vector<core::Record> records = planted_platform(4, 8);
  TrainRequest req = small_request(records);
  req.optimisation.epochs = 0;
  EXPECT_EQ(train_platform(req).status().code(), StatusCode::kInvalidArgument);
  req = small_request(records);
  req.model.d_model = 0;
  EXPECT_EQ(train_platform(req).status().code(), StatusCode::kInvalidArgument);
  req = small_request(records);
  req.optimisation.gain_power = 0;
  EXPECT_EQ(train_platform(req).status().code(), StatusCode::kInvalidArgument);
  req = small_request(records);
  req.optimisation.listwise_beta = -1;
  EXPECT_EQ(train_platform(req).status().code(), StatusCode::kInvalidArgument);
  req = small_request(records);
  req.optimisation.ema_decay = 1;
  EXPECT_EQ(train_platform(req).status().code(), StatusCode::kInvalidArgument);
  req = small_request({});
  EXPECT_EQ(train_platform(req).status().code(), StatusCode::kFailedPrecondition);
}

// The listwise label loss and the weight average (Optimisation::label_loss,
// ema_decay) train a model that ranks held-out tasks; the average is what
// the job returns (other weights than the last step's).
TEST(TrainJobTest, ListwiseLossAndWeightAverageRankHeldOutTasks) {
  const std::vector<core::Record> records = planted_platform(24, 48);  // the request's span reads them
  TrainRequest req = small_request(records);
  req.optimisation.label_loss = LabelLoss::kListwise;
  auto last_step = train_platform(req);
  req.optimisation.ema_decay = 0.9;
  auto averaged = train_platform(req);
  ASSERT_TRUE(last_step.is_ok()) << last_step.status().to_string();
  ASSERT_TRUE(averaged.is_ok()) << averaged.status().to_string();
  for (const TrainResult* r : {&*last_step, &*averaged}) {
    EXPECT_GT(r->metrics.pairwise_accuracy, 0.8);
    EXPECT_GT(r->metrics.top1.mean_ratio, r->metrics.random_top1.mean_ratio + 0.2);
  }
  EXPECT_NE(last_step->checkpoint, averaged->checkpoint);
  EXPECT_EQ(last_step->steps, averaged->steps);
}

}  // namespace
}  // namespace tcl::trainer

namespace tcl::trainer {
namespace {

// Another platform: the planted rule reversed on the tile (tile 1 best).
std::vector<core::Record> reversed_platform(int tasks, int per_task) {
  std::vector<core::Record> out = planted_platform(tasks, per_task);
  out.pop_back();  // the failed one
  for (auto& r : out) {
    const double tile = static_cast<double>(r.steps[0].lengths[0]);
    r.costs = {1e-3 * (1.0 + 0.3 * std::log2(tile)) * (1.0 + 0.01 * (r.steps[1].annotation))};
  }
  return out;
}

// Distillation keeps what the teacher knew about the old platform (its
// ranking under the old descriptor) far better than plain fine-tuning on the
// new platform, while it learns the new one; the Fisher is stored with each
// model; the run is reproducible.
TEST(TrainJobTest, DistillationKeepsTheOldPlatform) {
  const std::vector<core::Record> old_records = planted_platform(16, 48);
  TrainRequest base = small_request(old_records);
  base.optimisation.epochs = 8;
  auto teacher = train_platform(base, nullptr);
  ASSERT_TRUE(teacher.is_ok()) << teacher.status().to_string();
  ASSERT_EQ(teacher->fisher.size(), 4u * static_cast<std::size_t>(teacher->num_parameters));
  {
    const float* f = reinterpret_cast<const float*>(teacher->fisher.data());
    double mean = 0;
    for (std::int64_t i = 0; i < teacher->num_parameters; ++i) {
      ASSERT_TRUE(std::isfinite(f[i]) && f[i] >= 0);
      mean += f[i];
    }
    EXPECT_NEAR(mean / static_cast<double>(teacher->num_parameters), 1.0, 1e-3);
  }

  // The new platform: another target (so another descriptor), the rule reversed.
  std::vector<core::Record> new_records = reversed_platform(16, 48);
  const char* new_target = "cuda -keys=cuda,gpu -arch=sm_75 -thread_warp_size=32";
  for (auto& r : new_records) r.target = new_target;
  std::vector<float> old_descriptor(core::kHardwareDim), new_descriptor(core::kHardwareDim);
  core::encode_hardware(std::nullopt, kTarget, old_descriptor.data());
  core::encode_hardware(std::nullopt, new_target, new_descriptor.data());

  const auto onboard = [&](const DistillTargets* kd, const DistillLevers& levers = {}) {  // kd null: a plain fine-tune
    TrainRequest r = small_request(new_records);
    r.data.platform = Platform{new_target, std::nullopt};
    r.optimisation.epochs = 12;
    if (kd == nullptr) {
      r.start = FineTune{.init_checkpoint = teacher->checkpoint};
    } else {
      r.start = Distill{.teacher = {.init_checkpoint = teacher->checkpoint}, .targets = *kd, .levers = levers};
    }
    auto out = train_platform(r, nullptr);
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    return out;
  };
  auto plain = onboard(nullptr);
  DistillTargets kd;
  kd.old_descriptors = {old_descriptor};
  kd.teacher_fisher = teacher->fisher;
  auto distilled = onboard(&kd);
  ASSERT_TRUE(plain.is_ok() && distilled.is_ok());
  EXPECT_EQ(distilled->num_parameters, teacher->num_parameters);  // constant size

  // Forgetting, measured as DESIGN §10 does: the old platform's held-out tasks.
  DatasetOptions split = base.data.options;  // the teacher's evaluation split
  const auto old_metrics = [&](const std::string& checkpoint) {
    auto m = evaluate_checkpoint(checkpoint, old_records, base.data.platform, split, 1);
    EXPECT_TRUE(m.is_ok()) << m.status().to_string();
    return m.is_ok() ? m->pairwise_accuracy : 0.0;
  };
  const double t_old = old_metrics(teacher->checkpoint), p_old = old_metrics(plain->checkpoint),
               d_old = old_metrics(distilled->checkpoint);
  std::printf(
      "[ distill ] old platform pairwise: teacher %.3f, plain fine-tune %.3f, distilled %.3f; "
      "new platform pairwise: plain %.3f, distilled %.3f\n",
      t_old, p_old, d_old, plain->metrics.pairwise_accuracy, distilled->metrics.pairwise_accuracy);
  EXPECT_GT(d_old, p_old + 0.1);
  EXPECT_GT(d_old, t_old - 0.1);
  EXPECT_GT(distilled->metrics.pairwise_accuracy, 0.7);  // and it learned the new platform

  // Same inputs, same bytes.
  auto again = onboard(&kd);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->checkpoint, distilled->checkpoint);

  // old_weight_on_new_programs scales the old term on the new platform's
  // programs (no bank here): factor 0 trains as old_weight 0, 0.5 of
  // old_weight 2 as old_weight 1, byte for byte; 1 as no factor at all.
  const auto with = [&](double old_weight, std::vector<double> factors) {
    DistillTargets w = kd;
    w.old_weight = old_weight;
    auto out = onboard(&w, DistillLevers{.old_weight_on_new_programs = std::move(factors)});
    return out.is_ok() ? out->checkpoint : std::string();
  };
  const std::string none = with(2, {0.0});
  EXPECT_EQ(none, with(0, {}));
  EXPECT_NE(none, distilled->checkpoint);
  EXPECT_EQ(with(2, {0.5}), with(1, {}));
  EXPECT_EQ(with(kd.old_weight, {1.0}), distilled->checkpoint);
  DistillLevers wrong_size{.old_weight_on_new_programs = {1.0, 1.0}};  // one old platform
  TrainRequest refused = small_request(new_records);
  refused.start = Distill{.teacher = {.init_checkpoint = teacher->checkpoint}, .targets = kd, .levers = wrong_size};
  EXPECT_EQ(train_platform(refused, nullptr).status().code(), StatusCode::kInvalidArgument);
  wrong_size.old_weight_on_new_programs = {-1.0};
  refused.start = Distill{.teacher = {.init_checkpoint = teacher->checkpoint}, .targets = kd, .levers = wrong_size};
  EXPECT_EQ(train_platform(refused, nullptr).status().code(), StatusCode::kInvalidArgument);

  // student_from_column: the student starts at the column's weights (here
  // the plain fine-tune's). At a learning rate too small to move a float it
  // scores as the column does, on both platforms; from the teacher it would
  // not learn the reversed rule at all.
  DistillTargets from_column = kd;
  from_column.column_checkpoint = plain->checkpoint;
  const DistillLevers start_at_column{.student_from_column = true};
  TrainRequest still = small_request(new_records);
  still.data.platform = Platform{new_target, std::nullopt};
  still.optimisation.learning_rate = 1e-20;
  still.start =
      Distill{.teacher = {.init_checkpoint = teacher->checkpoint}, .targets = from_column, .levers = start_at_column};
  auto at_column = train_platform(still, nullptr);
  ASSERT_TRUE(at_column.is_ok()) << at_column.status().to_string();
  EXPECT_NEAR(at_column->metrics.pairwise_accuracy, plain->metrics.pairwise_accuracy, 1e-6);
  EXPECT_NEAR(old_metrics(at_column->checkpoint), p_old, 1e-6);
  // EWC's anchor stays the teacher's: with EWC as the only term the student
  // walks from the column back towards the teacher's order on the old
  // platform. Anchored at its own start it would stay at the column's.
  from_column.label_weight = 0;
  from_column.column_weight = 0;
  from_column.old_weight = 0;
  from_column.ewc_weight = 1;
  auto pulled_back = onboard(&from_column, start_at_column);
  ASSERT_TRUE(pulled_back.is_ok());
  const double back_old = old_metrics(pulled_back->checkpoint);
  std::printf("[ distill ] from the column, EWC alone: old platform pairwise %.3f (column %.3f, teacher %.3f)\n",
              back_old, p_old, t_old);
  EXPECT_GT(back_old, p_old + 0.1);
  DistillTargets no_column = from_column;
  no_column.column_checkpoint = {};
  refused.start =
      Distill{.teacher = {.init_checkpoint = teacher->checkpoint}, .targets = no_column, .levers = start_at_column};
  EXPECT_EQ(train_platform(refused, nullptr).status().code(), StatusCode::kInvalidArgument);
  // A column of another config is refused, even without EWC: the lineage's
  // student keeps the teacher's layout.
  TrainRequest narrow_request = small_request(new_records);
  narrow_request.model.d_model = 8;
  narrow_request.optimisation.epochs = 1;
  auto narrow = train_platform(narrow_request, nullptr);
  ASSERT_TRUE(narrow.is_ok()) << narrow.status().to_string();
  DistillTargets other_config = from_column;
  other_config.column_checkpoint = narrow->checkpoint;
  other_config.teacher_fisher = {};
  other_config.ewc_weight = 0;
  other_config.label_weight = 1;
  refused.start =
      Distill{.teacher = {.init_checkpoint = teacher->checkpoint}, .targets = other_config, .levers = start_at_column};
  const Status other = train_platform(refused, nullptr).status();
  EXPECT_EQ(other.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other.message().find("teacher's config"), std::string::npos) << other.to_string();

  // A Fisher of the wrong size is refused.
  DistillTargets bad = kd;
  bad.teacher_fisher = std::string_view(teacher->fisher).substr(4);
  TrainRequest r = small_request(new_records);
  r.start = Distill{.teacher = {.init_checkpoint = teacher->checkpoint}, .targets = bad};
  EXPECT_EQ(train_platform(r, nullptr).status().code(), StatusCode::kInvalidArgument);
}

// bench_continual --platform-slots: DatasetOptions::descriptor_extra widens
// the fresh model's conditioning, and its checkpoint is scored only with the
// same extra floats.
TEST(TrainJobTest, DescriptorExtraWidensTheModelsConditioning) {
  const std::vector<core::Record> records = planted_platform(8, 24);
  TrainRequest r = small_request(records);
  r.optimisation.epochs = 1;
  r.data.options.descriptor_extra = {1.0f, 0.0f};
  auto trained = train_platform(r, nullptr);
  ASSERT_TRUE(trained.is_ok()) << trained.status().to_string();
  auto model = CostModel::load(trained->checkpoint);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  EXPECT_EQ((*model)->config().descriptor_dim, core::kHardwareDim + 2);
  auto scored = evaluate_checkpoint(trained->checkpoint, records, r.data.platform, r.data.options, 1);
  ASSERT_TRUE(scored.is_ok()) << scored.status().to_string();
  EXPECT_GT(scored->tasks, 0);
  DatasetOptions plain = r.data.options;
  plain.descriptor_extra.clear();
  EXPECT_FALSE(evaluate_checkpoint(trained->checkpoint, records, r.data.platform, plain, 1).is_ok());
}

// score_checkpoints: several checkpoints on the same programs, every task
// (no split), the fast path's scores ranking as evaluate_checkpoint's torch
// path does on the same tasks.
TEST(TrainJobTest, ScoreCheckpointsScoresEveryTaskOnceForEachCheckpoint) {
  const std::vector<core::Record> records = planted_platform(12, 40);
  TrainRequest r = small_request(records);
  r.optimisation.epochs = 2;
  auto trained = train_platform(r, nullptr);
  ASSERT_TRUE(trained.is_ok()) << trained.status().to_string();
  TrainRequest other = r;
  other.optimisation.epochs = 4;  // another model: more steps
  auto fresh = train_platform(other, nullptr);
  ASSERT_TRUE(fresh.is_ok());
  const std::string_view both[] = {trained->checkpoint, fresh->checkpoint};
  auto s = score_checkpoints(both, records, r.data.platform, 1);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  ASSERT_EQ(s->task_keys.size(), 12u);
  ASSERT_EQ(s->groups.size(), 12u * 40u);
  ASSERT_EQ(s->latencies.size(), s->groups.size());
  ASSERT_EQ(s->scores.size(), 2u);
  EXPECT_NE(s->scores[0], s->scores[1]);
  // Every task, as evaluate_checkpoint sees them when its split holds all of them.
  DatasetOptions all = r.data.options;
  all.eval_fraction = 0.999999;
  all.max_eval_records = 0;
  auto torch_path = evaluate_checkpoint(trained->checkpoint, records, r.data.platform, all, 1);
  ASSERT_TRUE(torch_path.is_ok()) << torch_path.status().to_string();
  const RankingMetrics fast = evaluate_ranking(s->groups, s->latencies, s->scores[0]);
  EXPECT_EQ(fast.tasks, torch_path->tasks);
  EXPECT_NEAR(fast.pairwise_accuracy, torch_path->pairwise_accuracy, 1e-3);
  EXPECT_NEAR(fast.top1.mean_ratio, torch_path->top1.mean_ratio, 1e-3);
  // A checkpoint that does not load is an error.
  const std::string_view bad[] = {"not a checkpoint"};
  EXPECT_FALSE(score_checkpoints(bad, records, r.data.platform, 1).is_ok());
}

// score_checkpoints with a split's options (bench_continual --ensembles):
// capped as evaluate_checkpoint caps its split, the same programs, so that
// its top-1 is evaluate_checkpoint's.
TEST(TrainJobTest, ScoreCheckpointsWithOptionsScoresTheProgramsEvaluateCheckpointScores) {
  const std::vector<core::Record> records = planted_platform(12, 40);
  TrainRequest r = small_request(records);
  r.optimisation.epochs = 2;
  auto trained = train_platform(r, nullptr);
  ASSERT_TRUE(trained.is_ok()) << trained.status().to_string();
  DatasetOptions split = r.data.options;
  split.eval_fraction = 0.999999;  // every task
  split.max_eval_records = 100;    // a cap below the 480 programs: a sample of each task
  auto torch_path = evaluate_checkpoint(trained->checkpoint, records, r.data.platform, split, 1);
  ASSERT_TRUE(torch_path.is_ok()) << torch_path.status().to_string();
  DatasetOptions capped = r.data.options;
  capped.max_records = split.max_eval_records;
  const std::string_view one[] = {trained->checkpoint};
  auto s = score_checkpoints(one, records, r.data.platform, capped, 1);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(static_cast<std::int64_t>(s->groups.size()), torch_path->programs);
  const RankingMetrics fast = evaluate_ranking(s->groups, s->latencies, s->scores[0]);
  EXPECT_EQ(fast.tasks, torch_path->tasks);
  EXPECT_NEAR(fast.top1.mean_ratio, torch_path->top1.mean_ratio, 1e-3);
  EXPECT_NEAR(fast.pairwise_accuracy, torch_path->pairwise_accuracy, 1e-3);
  // Uncapped, every program is scored.
  auto all = score_checkpoints(one, records, r.data.platform, 1);
  ASSERT_TRUE(all.is_ok());
  EXPECT_EQ(all->groups.size(), 12u * 40u);
  EXPECT_LT(s->groups.size(), all->groups.size());
}

// Joint training on two platforms whose rules disagree: one model ranks
// both (each under its own descriptor), which a single-platform model cannot.
TEST(TrainJobTest, JointTrainingLearnsEveryPlatform) {
  const std::vector<core::Record> a = planted_platform(16, 48);
  std::vector<core::Record> b = reversed_platform(16, 48);
  const char* b_target = "cuda -keys=cuda,gpu -arch=sm_75 -thread_warp_size=32";
  for (auto& r : b) r.target = b_target;
  TrainRequest joint = small_request(a);
  joint.optimisation.epochs = 12;
  joint.start = JointTraining{.platforms = {{b, Platform{b_target, std::nullopt}}}};
  auto both = train_platform(joint, nullptr);
  ASSERT_TRUE(both.is_ok()) << both.status().to_string();
  TrainRequest only_a = small_request(a);
  only_a.optimisation.epochs = 12;
  auto single = train_platform(only_a, nullptr);
  ASSERT_TRUE(single.is_ok());

  const DatasetOptions split = joint.data.options;
  const auto pairwise = [&](const std::string& ckpt, const std::vector<core::Record>& records, const char* target) {
    auto m = evaluate_checkpoint(ckpt, records, Platform{target, std::nullopt}, split, 1);
    EXPECT_TRUE(m.is_ok()) << m.status().to_string();
    return m.is_ok() ? m->pairwise_accuracy : 0.0;
  };
  const double joint_a = pairwise(both->checkpoint, a, kTarget), joint_b = pairwise(both->checkpoint, b, b_target);
  const double single_b = pairwise(single->checkpoint, b, b_target);
  std::printf("[ joint ] pairwise: joint a %.3f, joint b %.3f; a-only model on b %.3f\n", joint_a, joint_b, single_b);
  EXPECT_GT(joint_a, 0.7);
  EXPECT_GT(joint_b, 0.7);
  EXPECT_GT(joint_b, single_b + 0.2);
}

// Scores of every program of `ds` by a checkpoint under `descriptor`.
std::vector<float> scores_under(const std::string& checkpoint, const Dataset& ds,
                                const std::vector<float>& descriptor) {
  auto model = CostModel::load(checkpoint);
  EXPECT_TRUE(model.is_ok());
  std::vector<float> out(static_cast<std::size_t>(ds.train.count));
  if (!model.is_ok()) return out;
  EXPECT_TRUE(
      (*model)
          ->predict(FeatureBatch{ds.train.count, ds.seq_len, ds.train.tokens, ds.train.lengths, descriptor}, out)
          .is_ok());
  return out;
}

// Share of the pairs within a task that `s` orders as `t` does (ties of t skipped).
double agreement(const std::vector<float>& t, const std::vector<float>& s, const std::vector<std::int64_t>& groups) {
  std::int64_t same = 0, pairs = 0;
  for (std::size_t a = 0; a < groups.size(); ++a) {
    for (std::size_t b = a + 1; b < groups.size() && groups[b] == groups[a]; ++b) {
      if (t[a] == t[b]) continue;
      ++pairs;
      same += (s[a] > s[b]) == (t[a] > t[b]) ? 1 : 0;
    }
  }
  return static_cast<double>(same) / static_cast<double>(std::max<std::int64_t>(pairs, 1));
}

// What the pool and the bank tests share: a teacher of the planted platform
// (trained once for the suite), a sibling CPU to distill into (same target,
// other hardware params: descriptors close to the old one, so learning it
// moves the old platform's scores too) and the distill they run.
class DistillInputsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    TrainRequest base = small_request(old_records());
    base.optimisation.epochs = 8;
    auto trained = train_platform(base, nullptr);
    ASSERT_TRUE(trained.is_ok()) << trained.status().to_string();
    teacher() = trained->checkpoint;
  }
  static const std::vector<core::Record>& old_records() {
    static const std::vector<core::Record> records = planted_platform(16, 48);
    return records;
  }
  static std::string& teacher() {
    static std::string checkpoint;
    return checkpoint;
  }
  static std::vector<float> old_descriptor() {
    std::vector<float> d(core::kHardwareDim);
    core::encode_hardware(std::nullopt, kTarget, d.data());
    return d;
  }
  const Platform new_platform{kTarget, core::HardwareParams{4, 64, 64, 0, 0, 0, 0, 0}};

  // `measured` distilled from the teacher towards `kd` (its old descriptor set here).
  Result<TrainResult> distill(const std::vector<core::Record>& measured, DistillTargets kd,
                              bool validation_by_tasks = false, const DistillLevers& levers = {}) const {
    kd.old_descriptors = {old_descriptor()};
    TrainRequest r = small_request(measured);
    r.data.platform = new_platform;
    r.optimisation.epochs = 24;
    r.optimisation.learning_rate = 1e-2;
    r.start = Distill{.teacher = {.init_checkpoint = teacher()}, .targets = kd, .levers = levers};
    if (validation_by_tasks) {
      r.data.options.validation_fraction = 0.3;
      r.data.options.validation_split = ValidationSplit::kTasks;
      r.data.options.sample_seed = 2;
    }
    auto out = train_platform(r, nullptr);
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    return out;
  }

  // Under the old descriptor, the share of pairs within a task of `programs`
  // that `checkpoint` orders as the teacher does.
  double old_agreement(const std::string& checkpoint, const std::vector<core::Record>& programs) const {
    auto ds = build_unlabeled_dataset(programs, new_platform, DatasetOptions{});
    EXPECT_TRUE(ds.is_ok()) << ds.status().to_string();
    if (!ds.is_ok()) return 0;
    return agreement(scores_under(teacher(), *ds, old_descriptor()), scores_under(checkpoint, *ds, old_descriptor()),
                     ds->train.groups);
  }

  // The bank tests' inputs: 12 measured programs of each reversed-platform
  // task, and the old platform's programs with their costs dropped (no old
  // measurement is read).
  static std::vector<core::Record> few_measured() {
    std::vector<core::Record> measured;
    const std::vector<core::Record> reversed = reversed_platform(16, 48);
    for (std::size_t i = 0; i < reversed.size(); ++i) {
      if (i % 48 < 12) measured.push_back(reversed[i]);
    }
    return measured;
  }
  static std::vector<core::Record> old_bank() {
    std::vector<core::Record> bank = old_records();
    for (auto& r : bank) r.costs.clear();
    return bank;
  }

  // A distill of `measured` towards `kd` is refused, naming `field`.
  void expect_refused(const std::vector<core::Record>& measured, DistillTargets kd, const char* field,
                      const DistillLevers& levers = {}) const {
    kd.old_descriptors = {old_descriptor()};
    TrainRequest bad = small_request(measured);
    bad.start = Distill{.teacher = {.init_checkpoint = teacher()}, .targets = kd, .levers = levers};
    auto refused = train_platform(bad, nullptr);
    ASSERT_FALSE(refused.is_ok()) << field;
    EXPECT_NE(refused.status().message().find(field), std::string::npos) << refused.status().to_string();
  }

  // Under the old descriptor, how far `checkpoint`'s embeddings of
  // `programs` are from the teacher's (distill_loss.h's feature_kd).
  double old_embedding_distance(const std::string& checkpoint, const std::vector<core::Record>& programs) const {
    auto ds = build_unlabeled_dataset(programs, new_platform, DatasetOptions{});
    auto student = CostModel::load(checkpoint);
    auto t = CostModel::load(teacher());
    EXPECT_TRUE(ds.is_ok() && student.is_ok() && t.is_ok());
    if (!ds.is_ok() || !student.is_ok() || !t.is_ok()) return 0;
    const SplitTensors x = to_tensors(ds->train, *ds, torch::kCPU);
    const torch::Tensor h = torch::tensor(old_descriptor()).unsqueeze(0).expand({x.count, -1});
    torch::NoGradGuard no_grad;
    return feature_kd((*student)->score_model()->embed(x.tokens, x.lengths, h),
                      (*t)->score_model()->embed(x.tokens, x.lengths, h))
        .item<double>();
  }
};

// The unmeasured pool as distillation inputs (DESIGN §5.2): with few
// measured programs, the new platform's unlabeled programs carry the old
// platform's ranking (teacher KD) and the column's into the student; they
// add KD-only steps (unlabeled_ratio x the measured ones) and no labels.
TEST_F(DistillInputsTest, DistillationLearnsFromTheUnmeasuredPool) {
  std::vector<core::Record> measured, unlabeled, pool = reversed_platform(16, 48);
  // Measured: 12 programs of each task, all with small tiles (1..8); the rest unmeasured candidates.
  for (std::size_t i = 0; i < pool.size(); ++i) {
    const int p = static_cast<int>(i % 48);
    if (p % 8 < 4 && p < 24) {
      measured.push_back(pool[i]);
    } else {
      core::Record r = pool[i];
      r.costs.clear();
      unlabeled.push_back(std::move(r));
    }
  }
  const auto with_pool = [&](double ratio, double old_weight = 1.0, bool validation_by_tasks = false) {
    // No EWC: the KD inputs alone keep the old platform.
    return distill(measured, {.unlabeled = unlabeled, .unlabeled_ratio = ratio, .old_weight = old_weight},
                   validation_by_tasks);
  };
  auto without = with_pool(0);
  auto with = with_pool(2);
  ASSERT_TRUE(without.is_ok() && with.is_ok());
  // Up to 2 unlabeled batches per measured batch, every epoch (fewer only
  // when the pool's chunks run out: it has 2 chunks per task here).
  EXPECT_LE(with->steps, 3 * without->steps);
  EXPECT_GE(2 * with->steps, 5 * without->steps);
  EXPECT_EQ(with->data.train_records, without->data.train_records);  // labels: the measured programs only
  EXPECT_GT(with->unlabeled_programs, 0);
  EXPECT_EQ(without->unlabeled_programs, 0);
  // No KD term with a weight: nothing to learn from the pool, so it is not used.
  auto no_kd = with_pool(2, /*old_weight=*/0.0);
  ASSERT_TRUE(no_kd.is_ok());
  EXPECT_EQ(no_kd->unlabeled_programs, 0);
  EXPECT_EQ(no_kd->steps, without->steps);
  // Whole validation tasks give no gradient, their unmeasured programs neither (36 a task).
  auto validated = with_pool(2, 1.0, /*validation_by_tasks=*/true);
  ASSERT_TRUE(validated.is_ok());
  ASSERT_GT(validated->data.validation_tasks, 0);
  EXPECT_EQ(validated->unlabeled_programs, with->unlabeled_programs - 36 * validated->data.validation_tasks);

  // What the KD on the pool asks for: under the old descriptor the student
  // orders the pool's programs as the teacher does (pairs within a task).
  const double agree_with = old_agreement(with->checkpoint, unlabeled);
  const double agree_without = old_agreement(without->checkpoint, unlabeled);
  std::printf(
      "[ unlabeled ] old-descriptor agreement with the teacher on the pool: distill %.3f, distill + pool %.3f\n",
      agree_without, agree_with);
  EXPECT_GT(agree_with, agree_without + 0.02);
  EXPECT_GT(agree_with, 0.9);
}

// The old platforms' bank (issue 19's lever): their own programs, without a
// measurement, as inputs of the old-platform KD term only. With the new
// platform's few measured programs alone as KD inputs, the student drifts
// from the teacher's order of the old platform's programs; the bank keeps it.
TEST_F(DistillInputsTest, DistillationKeepsTheOldOrderOnTheOldPlatformsBank) {
  const std::vector<core::Record> measured = few_measured();
  const std::vector<core::Record> bank = old_bank();
  const auto with_bank = [&](double bank_ratio, double old_weight = 1.0) {
    return distill(measured, {.old_bank = bank, .old_bank_ratio = bank_ratio, .old_weight = old_weight});
  };
  auto without = with_bank(0);
  auto with = with_bank(1);
  ASSERT_TRUE(without.is_ok() && with.is_ok());
  EXPECT_EQ(without->old_bank_programs, 0);
  EXPECT_EQ(with->old_bank_programs, static_cast<std::int64_t>(bank.size()));  // every task, none held out
  EXPECT_GT(with->steps, without->steps);  // KD-only steps on the bank, about one per measured step
  EXPECT_LE(with->steps, 2 * without->steps);
  EXPECT_EQ(with->data.train_records, without->data.train_records);  // labels: the new platform's only
  auto no_old_term = with_bank(1, /*old_weight=*/0.0);
  ASSERT_TRUE(no_old_term.is_ok());
  EXPECT_EQ(no_old_term->old_bank_programs, 0);

  // Under the old descriptor, pairs within an old task ordered as the teacher orders them.
  const double agree_with = old_agreement(with->checkpoint, bank);
  const double agree_without = old_agreement(without->checkpoint, bank);
  std::printf("[ old bank ] old-descriptor agreement with the teacher on the old programs: distill %.3f, + bank %.3f\n",
              agree_without, agree_with);
  EXPECT_GT(agree_with, agree_without + 0.02);
}

// Per-old-platform KD targets (DistillTargets::old_teachers; a best-of
// distill's): an old platform's teacher that is the teacher itself changes
// nothing, bit for bit; another model makes the student follow that model's
// order under the old descriptor; a count that does not match is refused.
TEST_F(DistillInputsTest, EachOldPlatformLearnsFromItsOwnTeacher) {
  const std::vector<core::Record> measured = few_measured();
  const std::vector<core::Record> bank = old_bank();
  auto t = CostModel::load(teacher());
  ASSERT_TRUE(t.is_ok());
  ModelConfig other_config = (*t)->config();
  other_config.seed = 99;  // another init: another order of the old programs
  auto other_model = CostModel::create(other_config);
  ASSERT_TRUE(other_model.is_ok());
  auto other_bytes = (*other_model)->save();
  ASSERT_TRUE(other_bytes.is_ok());
  const std::string other = *other_bytes;
  const auto with_teachers = [&](std::vector<std::string_view> old_teachers) {
    return distill(
        measured,
        {.old_descriptors = {}, .old_teachers = std::move(old_teachers), .old_bank = bank, .old_weight = 2.0});
  };
  auto plain = with_teachers({});
  auto itself = with_teachers({teacher()});
  auto own = with_teachers({other});
  ASSERT_TRUE(plain.is_ok() && itself.is_ok() && own.is_ok());
  EXPECT_EQ(itself->checkpoint, plain->checkpoint);
  auto ds = build_unlabeled_dataset(bank, new_platform, DatasetOptions{});
  ASSERT_TRUE(ds.is_ok());
  const std::vector<float> target = scores_under(other, *ds, old_descriptor());
  const double follows_own = agreement(target, scores_under(own->checkpoint, *ds, old_descriptor()), ds->train.groups);
  const double follows_plain =
      agreement(target, scores_under(plain->checkpoint, *ds, old_descriptor()), ds->train.groups);
  std::printf("[ old teachers ] agreement with the old platform's own teacher: its KD %.3f, the teacher's KD %.3f\n",
              follows_own, follows_plain);
  EXPECT_GT(follows_own, follows_plain + 0.05);
  DistillTargets two;
  two.old_teachers = {teacher(), other};  // one old platform, two teachers
  expect_refused(measured, two, "old_teachers");
}

// Feature KD on the bank (DistillLevers::feature_weight): besides the old
// order, the student keeps the teacher's embedding of the old platform's
// programs, at no extra step.
TEST_F(DistillInputsTest, FeatureKdKeepsTheOldEmbeddingOnTheBank) {
  const std::vector<core::Record> measured = few_measured();
  const std::vector<core::Record> bank = old_bank();
  auto plain = distill(measured, {.old_bank = bank, .old_bank_ratio = 1});
  auto feature = distill(measured, {.old_bank = bank, .old_bank_ratio = 1}, false, {.feature_weight = 5});
  ASSERT_TRUE(plain.is_ok() && feature.is_ok());
  EXPECT_EQ(feature->steps, plain->steps);
  const double d_plain = old_embedding_distance(plain->checkpoint, bank);
  const double d_feature = old_embedding_distance(feature->checkpoint, bank);
  std::printf("[ feature kd ] old-descriptor embedding distance from the teacher on the bank: %.4f, + feature %.4f\n",
              d_plain, d_feature);
  EXPECT_LT(d_feature, 0.5 * d_plain);
  // A weight below 0, or not a number, is refused, naming the field.
  for (double w : {-1.0, std::nan("")}) expect_refused(measured, {}, "feature_weight", {.feature_weight = w});
}

// DistillLevers::teacher_mix: the student as trained, mixed back with its
// teacher in weight space (WiSE-FT) — at 0.5 the two checkpoints' midpoint,
// at 1 the teacher itself, with the same training steps either way.
TEST_F(DistillInputsTest, TeacherMixIsTheStudentMixedBackWithTheTeacher) {
  const std::vector<core::Record> measured = few_measured();
  auto plain = distill(measured, {});
  auto half = distill(measured, {}, false, {.teacher_mix = 0.5});
  auto whole = distill(measured, {}, false, {.teacher_mix = 1});
  ASSERT_TRUE(plain.is_ok() && half.is_ok() && whole.is_ok());
  EXPECT_EQ(half->steps, plain->steps);
  auto midpoint = interpolate_checkpoints(teacher(), plain->checkpoint, 0.5);
  ASSERT_TRUE(midpoint.is_ok()) << midpoint.status().to_string();
  auto ds = build_unlabeled_dataset(measured, new_platform, DatasetOptions{});
  ASSERT_TRUE(ds.is_ok()) << ds.status().to_string();
  const std::vector<float> h = old_descriptor();
  const std::vector<float> got = scores_under(half->checkpoint, *ds, h), want = scores_under(*midpoint, *ds, h);
  const std::vector<float> taught = scores_under(teacher(), *ds, h), trained = scores_under(plain->checkpoint, *ds, h);
  const std::vector<float> at_one = scores_under(whole->checkpoint, *ds, h);
  ASSERT_EQ(got.size(), want.size());
  double moved = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-4) << i;
    EXPECT_NEAR(at_one[i], taught[i], 1e-5) << i;
    moved = std::max(moved, static_cast<double>(std::abs(trained[i] - taught[i])));
  }
  EXPECT_GT(moved, 1e-2);  // the student did move from its teacher: the mix is not trivially either end
  // Outside [0, 1], or not a number, is refused, naming the field.
  for (double m : {-0.1, 1.5, std::nan("")}) expect_refused(measured, {}, "teacher_mix", {.teacher_mix = m});
}

}  // namespace
}  // namespace tcl::trainer

namespace tcl::trainer {
namespace {

// Every architecture behind score_model.h learns the planted rule through
// the one training loop.
class TrainKindsTest : public ::testing::TestWithParam<ModelKind> {};

INSTANTIATE_TEST_SUITE_P(Kinds, TrainKindsTest,
                         ::testing::Values(ModelKind::kMamba, ModelKind::kAttention, ModelKind::kMlp),
                         [](const ::testing::TestParamInfo<ModelKind>& p) {
                           return std::string(model_kind_name(p.param));
                         });

TEST_P(TrainKindsTest, ShortJobLowersLossAndRanksHeldOutTasks) {
  const std::vector<core::Record> records = planted_platform(16, 32);
  TrainRequest req = small_request(records);
  req.model.kind = GetParam();
  req.model.n_heads = 2;  // divides d_model = 16
  req.optimisation.epochs = 8;
  auto r = train_platform(req);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::printf("[ kinds ] %-9s loss %.4f -> %.4f, held-out pairwise %.3f\n",
              std::string(model_kind_name(GetParam())).c_str(), r->epoch_losses.front(), r->epoch_losses.back(),
              r->metrics.pairwise_accuracy);
  // Eight short epochs: well above a coin (0.5), not yet the long runs' 0.85+.
  EXPECT_LT(r->epoch_losses.back(), 0.8 * r->epoch_losses.front());
  EXPECT_GT(r->metrics.pairwise_accuracy, 0.65);
}

}  // namespace
}  // namespace tcl::trainer
