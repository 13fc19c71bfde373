// tests/trainer/dataset_test.cc — build_dataset on small hand-made records:
// labels, failed and unmeasured records left out, groups by canonical task
// key, the split by whole tasks, the caps, the validation share inside
// training tasks, and the token buffers against
// core's encoders. Torch-free.
#include "trainer/dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/features.h"
#include "core/program_id.h"
#include "core/task_split.h"

namespace tcl::trainer {
namespace {

constexpr const char* kCpuTarget = "llvm -keys=cpu -mtriple=x86_64-linux-gnu";
constexpr const char* kGpuTarget = "cuda -keys=cuda,gpu -arch=sm_75 -max_num_threads=1024 -thread_warp_size=32";

core::Step split_step(std::int64_t inner) {
  core::Step s;
  s.kind = core::StepKind::kSplit;
  s.extent = 64;
  s.lengths = {inner};
  s.inner_to_outer = true;
  return s;
}

core::Step annotation_step(std::int32_t annotation) {
  core::Step s;
  s.kind = core::StepKind::kAnnotation;
  s.iter_id = 1;
  s.annotation = annotation;
  return s;
}

// A measured record of task `key` with `n_steps` steps and mean cost `cost`.
core::Record make_record(const std::string& key, double cost, int n_steps = 2, std::int32_t error_no = 0) {
  core::Record r;
  r.workload_key = key;
  r.target = kCpuTarget;
  r.hardware_params = core::HardwareParams{24, 64, 64, 0, 0, 0, 0, 0};
  for (int i = 0; i < n_steps; ++i) {
    r.steps.push_back(i % 2 == 0 ? split_step(1 + i) : annotation_step(2));
  }
  r.costs = {cost, cost};
  r.error_no = error_no;
  r.version = "v0.6";
  return r;
}

Platform cpu_platform() { return Platform{kCpuTarget, core::HardwareParams{24, 64, 64, 0, 0, 0, 0, 0}}; }

std::string task_key(int t) { return "[\"task" + std::to_string(t) + "\", 1, 64]"; }

// `tasks` tasks of `per_task` programs each, costs 1..per_task ms.
std::vector<core::Record> many_tasks(int tasks, int per_task) {
  std::vector<core::Record> out;
  for (int t = 0; t < tasks; ++t) {
    for (int i = 0; i < per_task; ++i) out.push_back(make_record(task_key(t), 1e-3 * (1 + i), 2 + (i % 3)));
  }
  return out;
}

// group id → set of latencies, for a split.
std::map<std::int64_t, std::vector<double>> by_group(const DatasetSplit& s) {
  std::map<std::int64_t, std::vector<double>> m;
  for (std::int64_t i = 0; i < s.count; ++i) m[s.groups[size_t(i)]].push_back(s.latencies[size_t(i)]);
  return m;
}

TEST(DatasetTest, LabelsGroupsAndExclusions) {
  std::vector<core::Record> records = {
      make_record("[\"a\", 1, 2]", 2e-3),                       // a: best 1e-3 → y = 0.5
      make_record("[\"b\",1]", 5e-3),                           // b
      make_record("[\"a\",1,2]", 1e-3),                         // a, same task (canonical key): y = 1
      make_record("[\"a\", 1, 2]", 0.5e-3, 2, /*error_no=*/1),  // failed: not a label, not the min
      make_record("[\"b\", 1]", 10e-3),                         // b: y = 0.5
      make_record("[\"a\",1,2]", 4e-3),                         // a: y = 0.25
      make_record("[\"c\"]", 1e-3),                             // c: a single measured program → dropped
  };
  core::Record candidate = make_record("[\"a\",1,2]", 0);
  candidate.costs = {0, 0};
  records.push_back(candidate);
  core::Record bad_cost = make_record("[\"b\",1]", 1e-3);
  bad_cost.costs = {1e-3, -1};  // a cost <= 0: failed
  records.push_back(bad_cost);

  auto ds = build_dataset(records, cpu_platform(), DatasetOptions{});
  ASSERT_TRUE(ds.is_ok()) << ds.status().to_string();
  const DatasetSummary& s = ds->summary;
  EXPECT_EQ(s.records, 9);
  EXPECT_EQ(s.measured, 6);
  EXPECT_EQ(s.failed, 2);
  EXPECT_EQ(s.candidates, 1);
  EXPECT_EQ(s.tasks, 2);
  EXPECT_EQ(s.tasks_dropped, 1);
  EXPECT_EQ(s.train_tasks, 2);
  EXPECT_EQ(s.train_records, 5);
  EXPECT_EQ(s.eval_records, 0);
  EXPECT_EQ(s.capped_records, 0);

  ASSERT_EQ(ds->task_keys, (std::vector<std::string>{"[\"a\",1,2]", "[\"b\",1]"}));
  const DatasetSplit& t = ds->train;
  ASSERT_EQ(t.count, 5);
  // Task a first (sorted keys), its programs in input order; then b.
  EXPECT_EQ(t.groups, (std::vector<std::int64_t>{0, 0, 0, 1, 1}));
  EXPECT_EQ(t.latencies, (std::vector<double>{2e-3, 1e-3, 4e-3, 5e-3, 10e-3}));
  const std::vector<float> want = {0.5f, 1.0f, 0.25f, 1.0f, 0.5f};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(t.labels[i], want[i]) << i;
  EXPECT_EQ(t.tasks, 2);

  // One descriptor for the platform, as core encodes it.
  std::vector<float> desc(core::kHardwareDim);
  core::encode_hardware(cpu_platform().hardware, kCpuTarget, desc.data());
  EXPECT_EQ(ds->descriptor, desc);
}

TEST(DatasetTest, TokensMatchCoreEncodingAndLengthIsTheLongest) {
  std::vector<core::Record> records = {make_record(task_key(0), 1e-3, 3), make_record(task_key(0), 2e-3, 7),
                                       make_record(task_key(1), 1e-3, 5), make_record(task_key(1), 3e-3, 1)};
  auto ds = build_dataset(records, cpu_platform(), DatasetOptions{});
  ASSERT_TRUE(ds.is_ok()) << ds.status().to_string();
  EXPECT_EQ(ds->encoding, TokenEncoding::kSteps);
  EXPECT_EQ(ds->seq_len, 7);
  EXPECT_EQ(ds->token_dim, core::kTokenDim);
  const DatasetSplit& t = ds->train;
  ASSERT_EQ(t.tokens.size(), size_t(4 * 7 * core::kTokenDim));
  EXPECT_EQ(t.lengths, (std::vector<std::int32_t>{3, 7, 5, 1}));
  std::vector<float> want(7 * core::kTokenDim);
  for (size_t i = 0; i < 4; ++i) {
    core::encode_tokens(records[i].steps, 7, want.data());
    EXPECT_TRUE(std::equal(want.begin(), want.end(), t.tokens.begin() + long(i * want.size()))) << i;
  }

  // max_len cuts: L = min(longest, max_len).
  DatasetOptions o;
  o.max_len = 4;
  auto cut = build_dataset(records, cpu_platform(), o);
  ASSERT_TRUE(cut.is_ok());
  EXPECT_EQ(cut->seq_len, 4);
  EXPECT_EQ(cut->train.lengths, (std::vector<std::int32_t>{3, 4, 4, 1}));
}

TEST(DatasetTest, WorkloadEncodingPutsTheTasksTokenFirst) {
  std::vector<core::Record> records = {make_record(task_key(0), 1e-3, 3), make_record(task_key(0), 2e-3, 7),
                                       make_record(task_key(1), 1e-3, 5), make_record(task_key(1), 3e-3, 1)};
  DatasetOptions o;
  o.encoding = TokenEncoding::kStepsWorkload;
  auto ds = build_dataset(records, cpu_platform(), o);
  ASSERT_TRUE(ds.is_ok()) << ds.status().to_string();
  EXPECT_EQ(ds->seq_len, 8);  // the longest, 7 steps, and the workload token
  EXPECT_EQ(ds->train.lengths, (std::vector<std::int32_t>{4, 8, 6, 2}));
  const std::size_t stride = 8 * core::kTokenDim;
  std::vector<float> workload(core::kTokenDim), steps(7 * core::kTokenDim);
  for (std::size_t i = 0; i < 4; ++i) {
    const float* row = ds->train.tokens.data() + i * stride;
    core::encode_workload(core::canonical_workload_key(records[i].workload_key), workload.data());
    EXPECT_TRUE(std::equal(workload.begin(), workload.end(), row)) << i;
    EXPECT_FLOAT_EQ(row[core::workload_slot::kScalars], 2.0f / 8) << i;  // the key's two scalars
    core::encode_tokens(records[i].steps, 7, steps.data());
    EXPECT_TRUE(std::equal(steps.begin(), steps.end(), row + core::kTokenDim)) << i;
  }
  // max_len counts the workload token: 3 keeps 2 steps.
  o.max_len = 3;
  auto cut = build_dataset(records, cpu_platform(), o);
  ASSERT_TRUE(cut.is_ok());
  EXPECT_EQ(cut->train.lengths, (std::vector<std::int32_t>{3, 3, 3, 2}));
  o.max_len = 1;
  EXPECT_EQ(build_dataset(records, cpu_platform(), o).status().code(), StatusCode::kInvalidArgument);
}

TEST(DatasetTest, TlpEncodingFollowsTheTarget) {
  std::vector<core::Record> records = many_tasks(2, 3);
  DatasetOptions o;
  o.encoding = TokenEncoding::kTlp;
  auto cpu = build_dataset(records, cpu_platform(), o);
  ASSERT_TRUE(cpu.is_ok());
  EXPECT_EQ(cpu->seq_len, core::kTlpCpu.seq_len);
  EXPECT_EQ(cpu->token_dim, core::kTlpCpu.emb_size);
  std::vector<float> want(size_t(core::kTlpCpu.seq_len * core::kTlpCpu.emb_size));
  core::encode_tlp(records[0].steps, core::kTlpCpu, want.data());
  EXPECT_TRUE(std::equal(want.begin(), want.end(), cpu->train.tokens.begin()));

  auto gpu = build_dataset(records, Platform{kGpuTarget, std::nullopt}, o);
  ASSERT_TRUE(gpu.is_ok());
  EXPECT_EQ(gpu->seq_len, core::kTlpGpu.seq_len);
  EXPECT_EQ(gpu->token_dim, core::kTlpGpu.emb_size);
  EXPECT_EQ(parse_token_encoding(token_encoding_name(TokenEncoding::kTlp)), TokenEncoding::kTlp);
  EXPECT_EQ(parse_token_encoding("nope"), std::nullopt);
}

TEST(DatasetTest, SplitKeepsWholeTasksAndFollowsInHoldout) {
  const std::vector<core::Record> records = many_tasks(60, 5);
  for (std::uint64_t salt : {0u, 1u, 2u}) {
    DatasetOptions o;
    o.eval_fraction = 0.3;
    o.split_salt = salt;
    auto ds = build_dataset(records, cpu_platform(), o);
    ASSERT_TRUE(ds.is_ok()) << ds.status().to_string();
    const auto train = by_group(ds->train), eval = by_group(ds->eval);
    EXPECT_EQ(train.size() + eval.size(), 60u);
    EXPECT_GT(eval.size(), 5u);
    EXPECT_LT(eval.size(), 35u);
    for (const auto& [g, lat] : train) {
      EXPECT_EQ(eval.count(g), 0u) << "task " << g << " in both splits";
      EXPECT_EQ(lat.size(), 5u);
      EXPECT_FALSE(core::in_holdout(ds->task_keys[size_t(g)], 0.3, salt));
    }
    for (const auto& [g, lat] : eval) {
      EXPECT_EQ(lat.size(), 5u);
      EXPECT_TRUE(core::in_holdout(ds->task_keys[size_t(g)], 0.3, salt));
    }
    EXPECT_EQ(ds->summary.eval_tasks, static_cast<std::int64_t>(eval.size()));
    EXPECT_EQ(ds->summary.eval_records, ds->eval.count);
  }
}

TEST(DatasetTest, RecordCapKeepsAShareOfEveryTaskWithTrueLabels) {
  const std::vector<core::Record> records = many_tasks(10, 20);
  DatasetOptions o;
  o.max_records = 50;
  o.sample_seed = 7;
  auto ds = build_dataset(records, cpu_platform(), o);
  ASSERT_TRUE(ds.is_ok());
  EXPECT_EQ(ds->train.count, 50);
  EXPECT_EQ(ds->summary.capped_records, 150);
  const auto groups = by_group(ds->train);
  EXPECT_EQ(groups.size(), 10u);
  for (const auto& [g, lat] : groups) EXPECT_EQ(lat.size(), 5u);
  // Labels compare with the task's true best (1 ms), sampled or not.
  for (std::int64_t i = 0; i < ds->train.count; ++i) {
    EXPECT_FLOAT_EQ(ds->train.labels[size_t(i)], static_cast<float>(1e-3 / ds->train.latencies[size_t(i)]));
  }
  // Deterministic by seed; another seed picks other programs.
  auto again = build_dataset(records, cpu_platform(), o);
  EXPECT_EQ(again->train.latencies, ds->train.latencies);
  o.sample_seed = 8;
  auto other = build_dataset(records, cpu_platform(), o);
  EXPECT_NE(other->train.latencies, ds->train.latencies);
  EXPECT_EQ(other->train.count, 50);

  // A tiny cap still keeps 2 programs of every task.
  o.max_records = 5;
  auto tiny = build_dataset(records, cpu_platform(), o);
  EXPECT_EQ(tiny->train.count, 20);
}

TEST(DatasetTest, TaskCapKeepsWholeTasks) {
  const std::vector<core::Record> records = many_tasks(10, 20);
  DatasetOptions o;
  o.max_records = 75;
  o.sampling = RecordSampling::kTasks;
  o.sample_seed = 3;
  auto ds = build_dataset(records, cpu_platform(), o);
  ASSERT_TRUE(ds.is_ok());
  EXPECT_EQ(ds->train.count, 60);
  EXPECT_EQ(ds->train.tasks, 3);
  for (const auto& [g, lat] : by_group(ds->train)) EXPECT_EQ(lat.size(), 20u);
  auto again = build_dataset(records, cpu_platform(), o);
  EXPECT_EQ(again->train.groups, ds->train.groups);
}

TEST(DatasetTest, EvalCapIsSeparateFromTrainCap) {
  const std::vector<core::Record> records = many_tasks(40, 10);
  DatasetOptions o;
  o.eval_fraction = 0.5;
  o.max_records = 40;
  auto ds = build_dataset(records, cpu_platform(), o);
  ASSERT_TRUE(ds.is_ok());
  EXPECT_LE(ds->train.count, 40 + 2 * ds->train.tasks);
  EXPECT_EQ(ds->eval.count, ds->eval.tasks * 10);  // eval untouched
  o.max_eval_records = 20;
  auto capped = build_dataset(records, cpu_platform(), o);
  EXPECT_LT(capped->eval.count, ds->eval.count);
  EXPECT_EQ(capped->eval.tasks, ds->eval.tasks);
}

// The validation split cuts a seeded share inside every training task that
// can spare it (>= 2 programs left on each side), never in eval tasks.
TEST(DatasetTest, ValidationSplitCutsInsideTrainingTasks) {
  std::vector<core::Record> records = many_tasks(30, 20);
  for (int i = 0; i < 3; ++i) records.push_back(make_record(task_key(99), 1e-3 * (1 + i)));  // too small to spare
  DatasetOptions o;
  o.eval_fraction = 0.3;
  o.validation_fraction = 0.25;
  o.sample_seed = 5;
  auto ds = build_dataset(records, cpu_platform(), o);
  ASSERT_TRUE(ds.is_ok()) << ds.status().to_string();
  const auto train = by_group(ds->train);
  const auto validation = by_group(ds->validation);
  const auto eval = by_group(ds->eval);
  ASSERT_GT(eval.size(), 0u);
  EXPECT_EQ(ds->summary.validation_records, ds->validation.count);
  EXPECT_EQ(ds->summary.validation_tasks, static_cast<std::int64_t>(validation.size()));
  std::int64_t small_task = -1;
  for (std::size_t g = 0; g < ds->task_keys.size(); ++g) {
    if (ds->task_keys[g] == core::canonical_workload_key(task_key(99))) small_task = static_cast<std::int64_t>(g);
  }
  ASSERT_GE(small_task, 0);
  ASSERT_TRUE(train.count(small_task)) << "the small task should be a training task, or its case goes untested";
  for (const auto& [g, lat] : train) {
    EXPECT_FALSE(eval.count(g));
    if (g == small_task) {
      EXPECT_FALSE(validation.count(g));
      EXPECT_EQ(lat.size(), 3u);
      continue;
    }
    ASSERT_TRUE(validation.count(g)) << "task " << g;
    EXPECT_EQ(validation.at(g).size(), 5u);  // round(20 · 0.25)
    EXPECT_EQ(lat.size(), 15u);
    // Disjoint, and together the whole task (costs 1..20 ms are distinct).
    std::set<double> all(lat.begin(), lat.end());
    for (double x : validation.at(g)) EXPECT_TRUE(all.insert(x).second);
    EXPECT_EQ(all.size(), 20u);
  }
  for (const auto& [g, lat] : validation) EXPECT_FALSE(eval.count(g));
  for (std::int64_t i = 0; i < ds->validation.count; ++i) {  // labels against the task's true best
    EXPECT_FLOAT_EQ(ds->validation.labels[size_t(i)], static_cast<float>(1e-3 / ds->validation.latencies[size_t(i)]));
  }
  // Deterministic by seed; another seed cuts elsewhere; 0 = none.
  auto again = build_dataset(records, cpu_platform(), o);
  EXPECT_EQ(again->validation.latencies, ds->validation.latencies);
  o.sample_seed = 6;
  EXPECT_NE(build_dataset(records, cpu_platform(), o)->validation.latencies, ds->validation.latencies);
  o.validation_fraction = 0;
  auto none = build_dataset(records, cpu_platform(), o);
  EXPECT_EQ(none->validation.count, 0);
  EXPECT_EQ(none->train.count, ds->train.count + ds->validation.count);
  o.validation_fraction = 1.0;
  EXPECT_EQ(build_dataset(records, cpu_platform(), o).status().code(), StatusCode::kInvalidArgument);
}

// kTasks: the validation split takes whole training tasks (in_holdout,
// salted by sample_seed), never eval tasks, and never every task.
TEST(DatasetTest, ValidationSplitByTasksTakesWholeTasks) {
  const std::vector<core::Record> records = many_tasks(40, 6);
  DatasetOptions o;
  o.eval_fraction = 0.25;
  o.validation_fraction = 0.3;
  o.validation_split = ValidationSplit::kTasks;
  o.sample_seed = 9;
  auto ds = build_dataset(records, cpu_platform(), o);
  ASSERT_TRUE(ds.is_ok()) << ds.status().to_string();
  const auto train = by_group(ds->train), validation = by_group(ds->validation), eval = by_group(ds->eval);
  ASSERT_GT(validation.size(), 0u);
  ASSERT_GT(train.size(), 0u);
  EXPECT_EQ(train.size() + validation.size() + eval.size(), 40u);
  for (const auto& [g, lat] : validation) {
    EXPECT_EQ(lat.size(), 6u);  // whole
    EXPECT_FALSE(train.count(g));
    EXPECT_FALSE(eval.count(g));
    EXPECT_TRUE(core::in_holdout(ds->task_keys[size_t(g)], 0.3, 9 ^ 0x7A11DA7E7A11DA7EULL));
  }
  for (const auto& [g, lat] : train) EXPECT_EQ(lat.size(), 6u);
  o.sample_seed = 10;  // another draw
  EXPECT_NE(build_dataset(records, cpu_platform(), o)->validation.groups, ds->validation.groups);
  // A draw of every training task leaves no validation rather than no training.
  o.validation_fraction = 0.999999;
  auto all = build_dataset(records, cpu_platform(), o);
  ASSERT_TRUE(all.is_ok());
  EXPECT_EQ(all->validation.count, 0);
  EXPECT_EQ(all->train.count, ds->train.count + ds->validation.count);
}

TEST(DatasetTest, Errors) {
  const std::vector<core::Record> records = many_tasks(3, 4);
  DatasetOptions o;
  o.eval_fraction = 1.0;
  EXPECT_EQ(build_dataset(records, cpu_platform(), o).status().code(), StatusCode::kInvalidArgument);
  o.eval_fraction = 0;
  o.max_len = 0;
  EXPECT_EQ(build_dataset(records, cpu_platform(), o).status().code(), StatusCode::kInvalidArgument);

  std::vector<core::Record> failed = many_tasks(2, 3);
  for (core::Record& r : failed) r.error_no = 4;
  EXPECT_EQ(build_dataset(failed, cpu_platform(), {}).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(build_dataset({}, cpu_platform(), {}).status().code(), StatusCode::kFailedPrecondition);

  // Every task held out: nothing to train on.
  DatasetOptions all_eval;
  all_eval.eval_fraction = 0.999999;
  EXPECT_EQ(build_dataset(records, cpu_platform(), all_eval).status().code(), StatusCode::kFailedPrecondition);

  auto p = platform_of(records);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->target, kCpuTarget);
  EXPECT_EQ(platform_of({}).status().code(), StatusCode::kNotFound);
}

TEST(DatasetTest, DescriptorExtraIsAppendedToThePlatformsDescriptor) {
  std::vector<core::Record> records = {make_record("[\"a\",1]", 2e-3), make_record("[\"a\",1]", 1e-3)};
  std::vector<float> desc(core::kHardwareDim);
  core::encode_hardware(cpu_platform().hardware, kCpuTarget, desc.data());
  DatasetOptions slot;
  slot.descriptor_extra = {0.0f, 1.0f, 0.0f};  // bench_continual --platform-slots: the second of three
  std::vector<float> want = desc;
  want.insert(want.end(), {0.0f, 1.0f, 0.0f});
  auto ds = build_dataset(records, cpu_platform(), slot);
  ASSERT_TRUE(ds.is_ok()) << ds.status().to_string();
  EXPECT_EQ(ds->descriptor, want);
  // The pool's dataset (a distillation's KD inputs) the same way.
  auto pool = build_unlabeled_dataset(records, cpu_platform(), slot);
  ASSERT_TRUE(pool.is_ok()) << pool.status().to_string();
  EXPECT_EQ(pool->descriptor, want);
  // Without it, the descriptor alone.
  auto plain = build_dataset(records, cpu_platform(), DatasetOptions{});
  ASSERT_TRUE(plain.is_ok());
  EXPECT_EQ(plain->descriptor, desc);
}

// Unlabeled programs (distillation inputs): every class counts, grouped by
// task in sorted key order, single-program tasks left out, tokens as core
// encodes them, the cap keeps a share of every task.
TEST(DatasetTest, UnlabeledDatasetGroupsEveryProgram) {
  std::vector<core::Record> records;
  for (int p = 0; p < 3; ++p) {
    core::Record candidate = make_record(task_key(2), 1.0, 2 + p);
    candidate.costs.clear();  // an unmeasured candidate
    records.push_back(candidate);
  }
  records.push_back(make_record(task_key(1), 1.0, 3));
  records.push_back(make_record(task_key(1), 1.0, 3, /*error_no=*/4));  // failed: still an input
  records.push_back(make_record(task_key(3), 1.0, 2));                  // alone in its task
  DatasetOptions options;
  options.max_len = 3;
  auto ds = build_unlabeled_dataset(records, cpu_platform(), options);
  ASSERT_TRUE(ds.is_ok()) << ds.status().to_string();
  EXPECT_EQ(ds->task_keys, (std::vector<std::string>{core::canonical_workload_key(task_key(1)),
                                                     core::canonical_workload_key(task_key(2))}));
  EXPECT_EQ(ds->summary.candidates, 3);
  EXPECT_EQ(ds->summary.failed, 1);
  EXPECT_EQ(ds->summary.tasks_dropped, 1);
  ASSERT_EQ(ds->train.count, 5);
  EXPECT_EQ(ds->eval.count, 0);
  EXPECT_EQ(ds->seq_len, 3);  // min(longest 4, max_len 3)
  EXPECT_EQ(ds->train.groups, (std::vector<std::int64_t>{0, 0, 1, 1, 1}));
  EXPECT_EQ(ds->train.lengths, (std::vector<std::int32_t>{3, 3, 2, 3, 3}));
  std::vector<float> expected(static_cast<std::size_t>(3 * core::kTokenDim), 0.0f);
  core::encode_tokens(records[2].steps, 3, expected.data());
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), ds->train.tokens.begin() + 4 * 3 * core::kTokenDim));

  // The cap: a share of every task, at least 2 each.
  DatasetOptions cap;
  cap.max_records = 40;
  cap.sample_seed = 7;
  auto capped = build_unlabeled_dataset(many_tasks(4, 40), cpu_platform(), cap);
  ASSERT_TRUE(capped.is_ok());
  EXPECT_EQ(capped->train.count, 40);
  EXPECT_EQ(capped->train.tasks, 4);

  // The eval split's tasks never become inputs.
  DatasetOptions split;
  split.eval_fraction = 0.5;
  split.split_salt = 3;
  const std::vector<core::Record> tasks = many_tasks(20, 3);
  auto outside = build_unlabeled_dataset(tasks, cpu_platform(), split);
  ASSERT_TRUE(outside.is_ok());
  std::int64_t held = 0;
  for (int t = 0; t < 20; ++t) held += core::in_holdout(core::canonical_workload_key(task_key(t)), 0.5, 3) ? 1 : 0;
  ASSERT_GT(held, 0);
  EXPECT_EQ(outside->train.tasks, 20 - held);
  for (const std::string& key : outside->task_keys) EXPECT_FALSE(core::in_holdout(key, 0.5, 3)) << key;

  EXPECT_EQ(build_unlabeled_dataset({records.data() + 5, 1}, cpu_platform(), DatasetOptions{}).status().code(),
            StatusCode::kFailedPrecondition);
  DatasetOptions bad;
  bad.max_len = 0;
  EXPECT_EQ(build_unlabeled_dataset(records, cpu_platform(), bad).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tcl::trainer
