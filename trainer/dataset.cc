// trainer/dataset.cc
#include "trainer/dataset.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <unordered_map>

#include "core/labels.h"
#include "core/program_id.h"
#include "core/random.h"
#include "core/target.h"
#include "core/task_split.h"

namespace tcl::trainer {
namespace {

using core::shuffle;
using core::SplitMix64;

// Measured programs of one kept task, in input order.
struct Task {
  std::string key;
  std::vector<std::size_t> members;  // record indices
  bool eval = false;
};

// Keeps about `cap` programs of `tasks` (0 = all), as `sampling` says; the
// kept members stay in input order. Returns the number left out.
std::int64_t apply_cap(std::vector<Task*>& tasks, std::int64_t cap, RecordSampling sampling, std::uint64_t seed) {
  std::int64_t total = 0;
  for (const Task* t : tasks) total += static_cast<std::int64_t>(t->members.size());
  if (cap <= 0 || total <= cap) return 0;
  SplitMix64 rng{seed};

  if (sampling == RecordSampling::kTasks) {
    std::vector<Task*> order = tasks;
    shuffle(order, rng);
    std::vector<Task*> kept;
    std::int64_t sum = 0;
    for (Task* t : order) {
      const auto n = static_cast<std::int64_t>(t->members.size());
      if (sum + n <= cap) {
        kept.push_back(t);
        sum += n;
      }
    }
    if (kept.empty()) {  // no whole task fits: part of the first one
      Task* t = order.front();
      shuffle(t->members, rng);
      t->members.resize(static_cast<std::size_t>(std::max<std::int64_t>(cap, 2)));
      std::sort(t->members.begin(), t->members.end());
      kept.push_back(t);
      sum = static_cast<std::int64_t>(t->members.size());
    }
    // Keep the sorted-by-key order of the caller.
    std::vector<Task*> in_order;
    for (Task* t : tasks) {
      if (std::find(kept.begin(), kept.end(), t) != kept.end()) in_order.push_back(t);
    }
    tasks = std::move(in_order);
    return total - sum;
  }

  // kRecords: the same share of every task, at least 2 programs each.
  const double share = static_cast<double>(cap) / static_cast<double>(total);
  std::int64_t sum = 0;
  for (Task* t : tasks) {
    const std::size_t n = t->members.size();
    std::size_t k = static_cast<std::size_t>(std::floor(static_cast<double>(n) * share));
    k = std::min(n, std::max<std::size_t>(k, 2));
    shuffle(t->members, rng);
    t->members.resize(k);
    std::sort(t->members.begin(), t->members.end());
    sum += static_cast<std::int64_t>(k);
  }
  return total - sum;
}

// Moves a seeded share of each task's programs out of `tasks` into the
// returned tasks (same keys; both sides keep input order): max(2, round(n ·
// share)) when at least 2 stay, none otherwise.
std::vector<Task> split_validation(const std::vector<Task*>& tasks, double share, std::uint64_t seed) {
  std::vector<Task> out;
  if (share <= 0) return out;
  SplitMix64 rng{seed};
  for (Task* t : tasks) {
    const std::size_t n = t->members.size();
    const auto k = std::max<std::size_t>(2, static_cast<std::size_t>(std::lround(static_cast<double>(n) * share)));
    if (n < k + 2) continue;
    shuffle(t->members, rng);
    Task v{t->key, std::vector<std::size_t>(t->members.end() - static_cast<std::ptrdiff_t>(k), t->members.end()),
           false};
    t->members.resize(n - k);
    std::sort(t->members.begin(), t->members.end());
    std::sort(v.members.begin(), v.members.end());
    out.push_back(std::move(v));
  }
  return out;
}

// Encodes the kept tasks into `out`.
void fill_split(const std::vector<Task*>& tasks, std::span<const core::Record> records, std::span<const double> labels,
                const std::vector<double>& mean_costs, const std::unordered_map<std::string, std::int64_t>& task_ids,
                const Dataset& shape, const core::TlpConfig& tlp, DatasetSplit* out) {
  std::int64_t n = 0;
  for (const Task* t : tasks) n += static_cast<std::int64_t>(t->members.size());
  const auto L = static_cast<std::size_t>(shape.seq_len);
  const auto D = static_cast<std::size_t>(shape.token_dim);
  const std::size_t stride = L * D;
  out->count = n;
  out->tasks = static_cast<std::int64_t>(tasks.size());
  out->tokens.assign(static_cast<std::size_t>(n) * stride, 0.0f);
  out->lengths.resize(static_cast<std::size_t>(n));
  out->labels.resize(static_cast<std::size_t>(n));
  out->latencies.resize(static_cast<std::size_t>(n));
  out->groups.resize(static_cast<std::size_t>(n));
  std::size_t row = 0;
  std::vector<float> workload(core::kTokenDim);
  for (const Task* t : tasks) {
    const std::int64_t group = task_ids.at(t->key);
    if (shape.encoding == TokenEncoding::kStepsWorkload) core::encode_workload(t->key, workload.data());
    for (std::size_t i : t->members) {
      float* dst = out->tokens.data() + row * stride;
      const std::span<const core::Step> steps = records[i].steps;
      switch (shape.encoding) {
        case TokenEncoding::kSteps: out->lengths[row] = core::encode_tokens(steps, static_cast<int>(L), dst); break;
        case TokenEncoding::kTlp: out->lengths[row] = core::encode_tlp(steps, tlp, dst); break;
        case TokenEncoding::kStepsWorkload:
          std::copy(workload.begin(), workload.end(), dst);
          out->lengths[row] = 1 + core::encode_tokens(steps, static_cast<int>(L) - 1, dst + core::kTokenDim);
          break;
      }
      out->labels[row] = static_cast<float>(labels[i]);
      out->latencies[row] = mean_costs[i];
      out->groups[row] = group;
      ++row;
    }
  }
}

// kInvalidArgument naming the first option of build_dataset out of range.
Status check_options(const DatasetOptions& options) {
  if (!(options.eval_fraction >= 0.0 && options.eval_fraction < 1.0)) {
    return Status::invalid_argument("dataset: eval_fraction must be in [0, 1), got " +
                                    std::to_string(options.eval_fraction));
  }
  if (options.max_len < 1) {
    return Status::invalid_argument("dataset: max_len must be >= 1, got " + std::to_string(options.max_len));
  }
  if (options.encoding == TokenEncoding::kStepsWorkload && options.max_len < 2) {
    return Status::invalid_argument("dataset: the workload encoding needs max_len >= 2 (its token and a step), got " +
                                    std::to_string(options.max_len));
  }
  if (options.max_records < 0 || options.max_eval_records < 0) {
    return Status::invalid_argument("dataset: max_records and max_eval_records must be >= 0");
  }
  if (!(options.validation_fraction >= 0.0 && options.validation_fraction < 1.0)) {
    return Status::invalid_argument("dataset: validation_fraction must be in [0, 1), got " +
                                    std::to_string(options.validation_fraction));
  }
  return Status::ok();
}

// The measured records grouped by task (first appearance order), with each
// record's task index and mean cost (0 for records that are not measured).
struct MeasuredTasks {
  std::vector<Task> tasks;
  std::vector<std::uint64_t> group;  // [records], index into tasks
  std::vector<double> mean_costs;    // [records]
};

// Classifies `records` (counted in *sum) and groups the measured ones by
// canonical workload key.
MeasuredTasks group_measured(std::span<const core::Record> records, DatasetSummary* sum) {
  MeasuredTasks out;
  out.group.assign(records.size(), 0);
  out.mean_costs.assign(records.size(), 0.0);
  std::unordered_map<std::string, std::size_t> task_index;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const core::Record& r = records[i];
    switch (core::classify(r)) {
      case core::RecordClass::kFailed: ++sum->failed; continue;
      case core::RecordClass::kCandidate: ++sum->candidates; continue;
      case core::RecordClass::kMeasured: ++sum->measured; break;
    }
    std::string key = core::canonical_workload_key(r.workload_key);
    auto [it, fresh] = task_index.try_emplace(key, out.tasks.size());
    if (fresh) out.tasks.push_back(Task{std::move(key), {}, false});
    out.tasks[it->second].members.push_back(i);
    out.group[i] = it->second;
    out.mean_costs[i] = core::mean_cost(r);
  }
  return out;
}

// The tasks with a ranking signal (>= 2 programs; the rest counted in
// sum->tasks_dropped), each marked eval or not, sorted by key.
std::vector<Task*> keep_ranked_tasks(std::vector<Task>& tasks, const DatasetOptions& options, DatasetSummary* sum) {
  std::vector<Task*> kept;
  for (Task& t : tasks) {
    if (t.members.size() < 2) {
      ++sum->tasks_dropped;
      continue;
    }
    t.eval = options.eval_fraction > 0 && core::in_holdout(t.key, options.eval_fraction, options.split_salt);
    kept.push_back(&t);
  }
  std::sort(kept.begin(), kept.end(), [](const Task* a, const Task* b) { return a->key < b->key; });
  return kept;
}

// Gives the sorted `kept` tasks their dense ids: appends their keys to
// ds->task_keys and returns key → id.
std::unordered_map<std::string, std::int64_t> number_tasks(const std::vector<Task*>& kept, Dataset* ds) {
  std::unordered_map<std::string, std::int64_t> task_ids;
  for (const Task* t : kept) {
    task_ids.emplace(t->key, static_cast<std::int64_t>(ds->task_keys.size()));
    ds->task_keys.push_back(t->key);
  }
  return task_ids;
}

// The validation split cut out of the training tasks. kPrograms owns the
// cut-out shares in `owned` (`tasks` points into it); kTasks points at whole
// training tasks.
struct ValidationCut {
  std::vector<Task> owned;
  std::vector<Task*> tasks;
};

// Moves the validation split out of *train, as options.validation_split says.
ValidationCut cut_validation(std::vector<Task*>* train, const DatasetOptions& options) {
  constexpr std::uint64_t kValidationSalt = 0x7A11DA7E7A11DA7EULL;
  ValidationCut cut;
  if (options.validation_split == ValidationSplit::kTasks && options.validation_fraction > 0) {
    std::vector<Task*> rest;
    for (Task* t : *train) {
      (core::in_holdout(t->key, options.validation_fraction, options.sample_seed ^ kValidationSalt) ? cut.tasks : rest)
          .push_back(t);
    }
    if (rest.empty()) {
      cut.tasks.clear();  // every task drawn: no validation
    } else {
      *train = std::move(rest);
    }
    return cut;
  }
  cut.owned = split_validation(*train, options.validation_fraction, options.sample_seed ^ kValidationSalt);
  for (Task& t : cut.owned) cut.tasks.push_back(&t);
  return cut;
}

// ds->seq_len and ds->token_dim: the TLP config's for kTlp, else the longest
// kept program (plus the workload token) capped at options.max_len.
void set_shape(std::span<const core::Record> records, std::initializer_list<const std::vector<Task*>*> splits,
               const DatasetOptions& options, const core::TlpConfig& tlp, Dataset* ds) {
  if (options.encoding == TokenEncoding::kTlp) {
    ds->seq_len = tlp.seq_len;
    ds->token_dim = tlp.emb_size;
    return;
  }
  std::size_t longest = 1;
  for (const auto* split : splits) {
    for (const Task* t : *split) {
      for (std::size_t i : t->members) longest = std::max(longest, records[i].steps.size());
    }
  }
  if (options.encoding == TokenEncoding::kStepsWorkload) ++longest;  // the workload token
  ds->seq_len = static_cast<std::int64_t>(std::min<std::size_t>(longest, static_cast<std::size_t>(options.max_len)));
  ds->token_dim = core::kTokenDim;
}

// The platform's hardware descriptor, then options.descriptor_extra.
std::vector<float> descriptor_of(const Platform& platform, const DatasetOptions& options) {
  std::vector<float> d(core::kHardwareDim);
  core::encode_hardware(platform.hardware, platform.target, d.data());
  d.insert(d.end(), options.descriptor_extra.begin(), options.descriptor_extra.end());
  return d;
}

}  // namespace

std::string_view token_encoding_name(TokenEncoding encoding) {
  switch (encoding) {
    case TokenEncoding::kSteps: return "steps";
    case TokenEncoding::kTlp: return "tlp";
    case TokenEncoding::kStepsWorkload: return "workload";
  }
  return "unknown";
}

std::optional<TokenEncoding> parse_token_encoding(std::string_view name) {
  if (name == "steps") return TokenEncoding::kSteps;
  if (name == "tlp") return TokenEncoding::kTlp;
  if (name == "workload") return TokenEncoding::kStepsWorkload;
  return std::nullopt;
}

Result<Dataset> build_dataset(std::span<const core::Record> records, const Platform& platform,
                              const DatasetOptions& options) {
  if (Status s = check_options(options); !s) return s;
  Dataset ds;
  ds.encoding = options.encoding;
  DatasetSummary& sum = ds.summary;
  sum.records = static_cast<std::int64_t>(records.size());

  MeasuredTasks measured = group_measured(records, &sum);
  // Labels from every measured program of the task, before any cap. Entries
  // that are not measured have cost 0 and get y = 0 (never used).
  const std::vector<double> labels = core::labels_from_costs(measured.group, measured.mean_costs);

  std::vector<Task*> kept = keep_ranked_tasks(measured.tasks, options, &sum);
  if (kept.empty()) {
    return Status::failed_precondition("dataset: no task has two measured programs (" + std::to_string(sum.measured) +
                                       " measured of " + std::to_string(sum.records) + " records)");
  }
  const std::unordered_map<std::string, std::int64_t> task_ids = number_tasks(kept, &ds);
  sum.tasks = static_cast<std::int64_t>(kept.size());

  std::vector<Task*> train, eval;
  for (Task* t : kept) (t->eval ? eval : train).push_back(t);
  if (train.empty()) {
    return Status::failed_precondition("dataset: all " + std::to_string(kept.size()) +
                                       " tasks fell in the eval split (eval_fraction " +
                                       std::to_string(options.eval_fraction) + ")");
  }
  sum.capped_records =
      apply_cap(train, options.max_records, options.sampling, options.sample_seed) +
      apply_cap(eval, options.max_eval_records, options.sampling, options.sample_seed ^ 0x5EED5EED5EED5EEDULL);
  const ValidationCut validation = cut_validation(&train, options);

  const core::TlpConfig tlp = core::parse_target(platform.target).has_key("gpu") ? core::kTlpGpu : core::kTlpCpu;
  set_shape(records, {&train, &eval, &validation.tasks}, options, tlp, &ds);
  ds.descriptor = descriptor_of(platform, options);

  fill_split(train, records, labels, measured.mean_costs, task_ids, ds, tlp, &ds.train);
  fill_split(eval, records, labels, measured.mean_costs, task_ids, ds, tlp, &ds.eval);
  fill_split(validation.tasks, records, labels, measured.mean_costs, task_ids, ds, tlp, &ds.validation);
  sum.train_tasks = ds.train.tasks;
  sum.train_records = ds.train.count;
  sum.eval_tasks = ds.eval.tasks;
  sum.eval_records = ds.eval.count;
  sum.validation_tasks = ds.validation.tasks;
  sum.validation_records = ds.validation.count;
  return ds;
}

Result<Dataset> build_unlabeled_dataset(std::span<const core::Record> records, const Platform& platform,
                                        const DatasetOptions& options) {
  if (options.max_len < 1) {
    return Status::invalid_argument("dataset: max_len must be >= 1, got " + std::to_string(options.max_len));
  }
  if (options.max_records < 0) return Status::invalid_argument("dataset: max_records must be >= 0");
  if (!(options.eval_fraction >= 0.0 && options.eval_fraction < 1.0)) {
    return Status::invalid_argument("dataset: eval_fraction must be in [0, 1), got " +
                                    std::to_string(options.eval_fraction));
  }
  Dataset ds;
  ds.encoding = TokenEncoding::kSteps;
  ds.summary.records = static_cast<std::int64_t>(records.size());
  std::unordered_map<std::string, std::size_t> task_index;
  std::vector<Task> all_tasks;
  for (std::size_t i = 0; i < records.size(); ++i) {
    switch (core::classify(records[i])) {
      case core::RecordClass::kFailed: ++ds.summary.failed; break;
      case core::RecordClass::kCandidate: ++ds.summary.candidates; break;
      case core::RecordClass::kMeasured: ++ds.summary.measured; break;
    }
    std::string key = core::canonical_workload_key(records[i].workload_key);
    auto [it, fresh] = task_index.try_emplace(key, all_tasks.size());
    if (fresh) all_tasks.push_back(Task{std::move(key), {}, false});
    all_tasks[it->second].members.push_back(i);
  }
  std::vector<Task*> kept;
  for (Task& t : all_tasks) {
    if (t.members.size() < 2) {
      ++ds.summary.tasks_dropped;
      continue;
    }
    if (options.eval_fraction > 0 && core::in_holdout(t.key, options.eval_fraction, options.split_salt)) {
      ++ds.summary.eval_tasks;  // left out: the eval split never gives a gradient
      continue;
    }
    kept.push_back(&t);
  }
  if (kept.empty()) {
    return Status::failed_precondition("dataset: no task outside the eval split has two unlabeled programs (" +
                                       std::to_string(records.size()) + " records)");
  }
  std::sort(kept.begin(), kept.end(), [](const Task* a, const Task* b) { return a->key < b->key; });
  const std::unordered_map<std::string, std::int64_t> task_ids = number_tasks(kept, &ds);
  ds.summary.tasks = static_cast<std::int64_t>(kept.size());
  ds.summary.capped_records = apply_cap(kept, options.max_records, RecordSampling::kRecords, options.sample_seed);
  std::size_t longest = 1;
  for (const Task* t : kept) {
    for (std::size_t i : t->members) longest = std::max(longest, records[i].steps.size());
  }
  ds.seq_len = static_cast<std::int64_t>(std::min<std::size_t>(longest, static_cast<std::size_t>(options.max_len)));
  ds.token_dim = core::kTokenDim;
  ds.descriptor = descriptor_of(platform, options);
  const std::vector<double> zeros(records.size(), 0.0);
  fill_split(kept, records, zeros, zeros, task_ids, ds, core::kTlpCpu, &ds.train);
  ds.summary.train_tasks = ds.train.tasks;
  ds.summary.train_records = ds.train.count;
  return ds;
}

Result<Platform> platform_of(std::span<const core::Record> records) {
  for (const core::Record& r : records) {
    if (!r.target.empty()) return Platform{r.target, r.hardware_params};
  }
  return Status::not_found("no record names a target");
}

}  // namespace tcl::trainer
