// bench_quality — the evaluation protocol of DESIGN §10 on one platform's
// real records: per seed, hold out a share of whole tasks (core::in_holdout,
// salt = seed), train every model kind with the same budget (same records,
// epochs, batch shape, learning rate, time budget), and score the held-out
// tasks: top-1 / top-5 (sum ratio and mean over tasks), pairwise accuracy
// the tuning proxy (trials to a program within 5% of the best against random
// order's, geometric mean over tasks and the share of tasks better than random)
// and the random-order floor. Prints per-seed rows and a markdown table of
// mean ± sample standard deviation over the seeds.
//
//   bench_quality --data DIR|FILE [--seeds 3] [--seed-base 1]
//       [--models mamba,attention:tlp,mlp] [--max-records N] [--max-eval-records N]
//       [--sampling records|tasks] [--eval-fraction 0.25] [--validation 0] [--epochs E]
//       [--time-budget S] [--threads 2] [--device auto|cpu|cuda] [--lr X] [--weight-decay X]
//       [--group-size N] [--groups-per-batch N] [--d-model N] [--n-layers N]
//       [--d-state N] [--expand N] [--dropout X] [--sigma X] [--ndcg-at K]
//       [--loss lambdarank|listwise] [--gain-power P] [--listwise-beta B] [--ema D] [--max-len N] [--verbose]
//       [--ensemble K] [--dump DIR]   (per-program eval scores as CSV, for diagnosis)
//   bench_quality --data DIR --job [--models KIND] [flags]
//       one train_platform call as the daemon's worker makes it: all records,
//       TrainRequest's defaults, only the flags given overriding them.
//
// A model is KIND[:ENCODING]: kind mamba|attention|mlp, encoding steps (the
// student's tokens, default), tlp (TLP's raw-argument encoding) or workload
// (the workload token, then the steps: core::encode_workload).
// "attention:tlp" is the TLP-style baseline with its own encoding.
//
// --ensemble K (issue 19 item 5's "small ensembles" lever): each model is
// trained K times on the same split, member k with optimisation seed
// seed + k · kMemberSeedStride (member 0 is the plain run), and the members'
// scores are averaged after standardising them within each task (a ranking
// model's scores have an arbitrary offset and scale per run). Rows "NAME xk"
// report the first k members together, so "NAME" and "NAME xK" are paired.
//
// --validation F (DESIGN §10: settings chosen on a validation split, never on
// the split reported): each seed drops its held-out tasks first, then scores
// a share F of the remaining training tasks (another salt). Compare settings
// with it, then report the chosen one without it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/line_reader.h"
#include "core/program_id.h"
#include "core/record.h"
#include "core/task_split.h"
#include "trainer/dataset.h"
#include "bench/lib/device_arg.h"
#include "bench/lib/timing.h"
#include "bench/lib/flags.h"
#include "bench/lib/records.h"
#include "trainer/device.h"
#include "trainer/evaluation.h"
#include "trainer/train_job.h"

namespace {

namespace core = tcl::core;
namespace tr = tcl::trainer;
using Clock = std::chrono::steady_clock;
using tcl::bench::cpu_seconds;
using tcl::bench::seconds_since;

struct ModelSpec {
  tr::ModelKind kind;
  tr::TokenEncoding encoding;
  std::string name;  // "mamba", "attention:tlp"
};

struct Args {
  std::string data;
  int seeds = 3;
  std::uint64_t seed_base = 1;
  std::vector<ModelSpec> models;
  std::int64_t max_records = 50'000;
  std::int64_t max_eval_records = 0;
  tr::RecordSampling sampling = tr::RecordSampling::kRecords;
  double eval_fraction = 0.25;
  // > 0: settings are being chosen. The held-out tasks (eval_fraction, salt =
  // seed) are dropped before anything is built, and this share of the
  // remaining tasks (salt = seed + kValidationSalt) is scored instead, so the
  // split a setting is reported on never takes part in choosing it.
  double validation = 0;
  int epochs = 4;
  double time_budget = 0;
  int threads = 2;
  tr::Device device = tr::Device::kAuto;  // --device: where every model trains
  double lr = -1, weight_decay = -1, dropout = -1, sigma = -1;
  std::int64_t group_size = 0, groups_per_batch = 0, d_model = 0, n_layers = 0, d_state = 0, expand = 0;
  std::int64_t ndcg_at = -1;
  std::string loss;  // --loss lambdarank|listwise, empty = the trainer's default
  double gain_power = -1, listwise_beta = -1, ema = -1;
  int max_len = core::kDefaultMaxSteps;
  int ensemble = 1;  // --ensemble K: members per model and seed
  bool verbose = false;
  std::string dump;             // directory for per-program eval scores (CSV), empty = none
  bool job = false;             // --job: one train_platform call with the job's defaults
  std::set<std::string> given;  // flags set on the command line
};

bool parse_models(std::string_view list, std::vector<ModelSpec>* out) {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    const std::size_t colon = item.find(':');
    const auto kind = tr::parse_model_kind(item.substr(0, colon));
    auto encoding = std::optional<tr::TokenEncoding>(tr::TokenEncoding::kSteps);
    if (colon != std::string_view::npos) encoding = tr::parse_token_encoding(item.substr(colon + 1));
    if (!kind || !encoding) {
      std::fprintf(stderr, "bad model '%.*s' (KIND[:steps|tlp|workload])\n", static_cast<int>(item.size()),
                   item.data());
      return false;
    }
    out->push_back({*kind, *encoding, std::string(item)});
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return !out->empty();
}

bool parse_args(int argc, char** argv, Args* a) {
  std::string models = "mamba,attention:tlp,mlp";
  tcl::bench::Flags flags;
  flags.flag("verbose", &a->verbose)
      .flag("job", &a->job)
      .value("data", &a->data)
      .value("seeds", &a->seeds)
      .value("seed-base", &a->seed_base)
      .value("models", &models)
      .value("max-records", &a->max_records)
      .value("max-eval-records", &a->max_eval_records)
      .custom("sampling",
              [a](const std::string& v) {
                a->sampling = v == "tasks" ? tr::RecordSampling::kTasks : tr::RecordSampling::kRecords;
                return true;
              })
      .value("eval-fraction", &a->eval_fraction)
      .value("validation", &a->validation)
      .value("epochs", &a->epochs)
      .value("time-budget", &a->time_budget)
      .value("threads", &a->threads)
      .custom("device", tcl::bench::device_arg(&a->device))
      .value("lr", &a->lr)
      .value("weight-decay", &a->weight_decay)
      .value("dropout", &a->dropout)
      .value("sigma", &a->sigma)
      .value("ndcg-at", &a->ndcg_at)
      .value("loss", &a->loss)
      .value("gain-power", &a->gain_power)
      .value("listwise-beta", &a->listwise_beta)
      .value("ema", &a->ema)
      .value("group-size", &a->group_size)
      .value("groups-per-batch", &a->groups_per_batch)
      .value("d-model", &a->d_model)
      .value("n-layers", &a->n_layers)
      .value("d-state", &a->d_state)
      .value("expand", &a->expand)
      .value("max-len", &a->max_len)
      .value("ensemble", &a->ensemble)
      .value("dump", &a->dump);
  if (!flags.parse(argc, argv)) return false;
  if (!a->loss.empty() && a->loss != "lambdarank" && a->loss != "listwise") {
    std::fprintf(stderr, "--loss: lambdarank or listwise, not '%s'\n", a->loss.c_str());
    return false;
  }
  a->given = flags.given();
  a->given.erase("--verbose");  // switches were never counted as given values
  a->given.erase("--job");
  if (a->data.empty()) {
    std::fprintf(stderr,
                 "usage: bench_quality --data DIR|FILE [--seeds 3] [--models mamba,attention:tlp,mlp]\n"
                 "       [--max-records N] [--epochs E] [--time-budget S] ... (see bench/quality.cc)\n");
    return false;
  }
  if (!tcl::bench::resolve_device_arg(&a->device)) return false;
  if (a->ensemble < 1 || (a->job && a->ensemble > 1)) {
    std::fprintf(stderr, "--ensemble: at least 1 member, and 1 with --job\n");
    return false;
  }
  return parse_models(models, &a->models) && a->seeds >= 1;
}

// The columns of the table.
struct Row {
  double top1_sum, top1_mean, top5_sum, top5_mean, pairwise;
  double tuning, tuning_better;  // the tuning proxy: geometric mean, share of tasks better than random
  double train_s, steps, epochs, params;
  double cpu_s = 0;
};
Row row_of(const tr::TrainResult& r) {
  const tr::RankingMetrics& m = r.metrics;
  return {m.top1.sum_ratio,
          m.top1.mean_ratio,
          m.top5.sum_ratio,
          m.top5.mean_ratio,
          m.pairwise_accuracy,
          m.tuning.geomean_ratio,
          m.tuning.share_better,
          r.train_s,
          static_cast<double>(r.steps),
          static_cast<double>(r.epochs_done),
          static_cast<double>(r.num_parameters)};
}
Row floor_of(const tr::RankingMetrics& m) {
  return {m.random_top1.sum_ratio,
          m.random_top1.mean_ratio,
          m.random_top5.sum_ratio,
          m.random_top5.mean_ratio,
          0.5,
          m.random_tuning.geomean_ratio,
          m.random_tuning.share_better,
          0,
          0,
          0,
          0};
}

std::string mean_sd(const std::vector<double>& xs, int digits) {
  double mean = 0;
  for (double x : xs) mean += x;
  mean /= static_cast<double>(xs.size());
  double var = 0;
  for (double x : xs) var += (x - mean) * (x - mean);
  const double sd = xs.size() > 1 ? std::sqrt(var / static_cast<double>(xs.size() - 1)) : 0.0;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f ± %.*f", digits, mean, digits, sd);
  return buf;
}

void print_table(const std::vector<std::string>& names, const std::map<std::string, std::vector<Row>>& rows) {
  std::printf(
      "\n| model | top-1 sum | top-1 mean | top-5 sum | top-5 mean | pairwise | tuning proxy | better than random "
      "| params | epochs | steps | train s | cpu s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& name : names) {
    const std::vector<Row>& rs = rows.at(name);
    auto col = [&](double Row::*f, int digits) {
      std::vector<double> xs;
      for (const Row& r : rs) xs.push_back(r.*f);
      return mean_sd(xs, digits);
    };
    const bool floor = name == "random floor";
    std::printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name.c_str(),
                col(&Row::top1_sum, 3).c_str(), col(&Row::top1_mean, 3).c_str(), col(&Row::top5_sum, 3).c_str(),
                col(&Row::top5_mean, 3).c_str(), floor ? "0.5" : col(&Row::pairwise, 3).c_str(),
                col(&Row::tuning, 3).c_str(), col(&Row::tuning_better, 2).c_str(),
                floor ? "" : std::to_string(static_cast<long long>(rs[0].params)).c_str(),
                floor ? "" : col(&Row::epochs, 1).c_str(), floor ? "" : col(&Row::steps, 0).c_str(),
                floor ? "" : col(&Row::train_s, 0).c_str(), floor ? "" : col(&Row::cpu_s, 0).c_str());
  }
}

// --job: what the daemon's worker does — one train_platform call on all the
// records with TrainRequest's defaults (split, caps, epochs, schedule), only
// the flags given on the command line overriding them.
int run_job(const Args& a, const std::vector<core::Record>& records, const tr::Platform& platform) {
  tr::TrainRequest req;
  req.data.records = records;
  req.data.platform = platform;
  req.model.kind = a.models.front().kind;
  req.data.options.encoding = a.models.front().encoding;
  const auto has = [&](const char* flag) { return a.given.count(flag) != 0; };
  if (has("--max-records")) req.data.options.max_records = a.max_records;
  if (has("--max-eval-records")) req.data.options.max_eval_records = a.max_eval_records;
  if (has("--eval-fraction")) req.data.options.eval_fraction = a.eval_fraction;
  if (has("--epochs")) req.optimisation.epochs = a.epochs;
  if (has("--time-budget")) req.resources.time_budget_s = a.time_budget;
  if (has("--lr")) req.optimisation.learning_rate = a.lr;
  if (has("--group-size")) req.optimisation.group_size = a.group_size;
  if (has("--groups-per-batch")) req.optimisation.groups_per_batch = a.groups_per_batch;
  req.optimisation.seed = a.seed_base;
  req.resources.threads = a.threads;
  req.resources.device = a.device;
  std::printf(
      "job: %s, max_records %lld, max_eval_records %lld, eval fraction %.2f, epochs %d, "
      "time budget %.0f s, threads %d, device %s\n",
      a.models.front().name.c_str(), static_cast<long long>(req.data.options.max_records),
      static_cast<long long>(req.data.options.max_eval_records), req.data.options.eval_fraction,
      req.optimisation.epochs, req.resources.time_budget_s, req.resources.threads,
      std::string(tr::device_name(req.resources.device)).c_str());
  std::fflush(stdout);
  const Clock::time_point t0 = Clock::now();
  const double cpu0 = cpu_seconds();
  auto result = tr::train_platform(req, [&](int epoch, int, double loss, double val_top1) {
    std::printf("  epoch %d loss %.4f val top-1 mean %.4f (%.0f s)\n", epoch, loss, val_top1, seconds_since(t0));
    std::fflush(stdout);
    return true;
  });
  if (!result) {
    std::fprintf(stderr, "%s\n", result.status().to_string().c_str());
    return 1;
  }
  const tr::TrainResult& r = *result;
  const tr::RankingMetrics& m = r.metrics;
  std::printf(
      "data: %lld records, %lld measured, %lld failed; train %lld tasks / %lld programs, "
      "eval %lld tasks / %lld programs, %lld capped\n",
      static_cast<long long>(r.data.records), static_cast<long long>(r.data.measured),
      static_cast<long long>(r.data.failed), static_cast<long long>(r.data.train_tasks),
      static_cast<long long>(r.data.train_records), static_cast<long long>(r.data.eval_tasks),
      static_cast<long long>(r.data.eval_records), static_cast<long long>(r.data.capped_records));
  std::printf(
      "eval: top-1 %.4f/%.4f top-5 %.4f/%.4f pairwise %.4f tuning %.4f (%.2f better) "
      "(floor top-1 %.4f/%.4f tuning %.4f (%.2f better))\n",
      m.top1.sum_ratio, m.top1.mean_ratio, m.top5.sum_ratio, m.top5.mean_ratio, m.pairwise_accuracy,
      m.tuning.geomean_ratio, m.tuning.share_better, m.random_top1.sum_ratio, m.random_top1.mean_ratio,
      m.random_tuning.geomean_ratio, m.random_tuning.share_better);
  std::printf(
      "%lld params, %d epochs, %lld steps%s; wall %.1f s (dataset %.1f, train %.1f, eval %.1f), "
      "cpu %.0f s, checkpoint %zu bytes\n",
      static_cast<long long>(r.num_parameters), r.epochs_done, static_cast<long long>(r.steps),
      r.budget_exhausted ? " (budget hit)" : "", r.wall_s, r.dataset_s, r.train_s, r.eval_s, cpu_seconds() - cpu0,
      r.checkpoint.size());
  return 0;
}

// One model trained on `ds` with the command line's settings and `seed`.
tcl::Result<tr::TrainResult> train_one(const Args& a, const ModelSpec& m, const tr::Dataset& ds, std::uint64_t seed,
                                       const std::string& label, Clock::time_point t0) {
  tr::DatasetTrainRequest req;
  req.dataset = &ds;
  req.model.kind = m.kind;
  req.model.max_len = a.max_len;
  if (a.d_model > 0) req.model.d_model = a.d_model;
  if (a.n_layers > 0) req.model.n_layers = a.n_layers;
  if (a.d_state > 0) req.model.d_state = a.d_state;
  if (a.expand > 0) req.model.expand = a.expand;
  if (a.dropout >= 0) req.model.dropout = a.dropout;
  req.optimisation.epochs = a.epochs;
  if (a.lr > 0) req.optimisation.learning_rate = a.lr;
  if (a.weight_decay >= 0) req.optimisation.weight_decay = a.weight_decay;
  if (a.sigma > 0) req.optimisation.lambda_sigma = a.sigma;
  if (a.ndcg_at >= 0) req.optimisation.ndcg_at = a.ndcg_at;
  if (a.loss == "listwise") req.optimisation.label_loss = tr::LabelLoss::kListwise;
  if (a.gain_power > 0) req.optimisation.gain_power = a.gain_power;
  if (a.listwise_beta > 0) req.optimisation.listwise_beta = a.listwise_beta;
  if (a.ema >= 0) req.optimisation.ema_decay = a.ema;
  if (a.group_size > 0) req.optimisation.group_size = a.group_size;
  if (a.groups_per_batch > 0) req.optimisation.groups_per_batch = a.groups_per_batch;
  req.optimisation.seed = seed;
  req.resources.threads = a.threads;
  req.resources.device = a.device;
  req.resources.time_budget_s = a.time_budget;
  req.resources.eval_each_epoch = a.verbose;
  return tr::train_platform(req, [&](int epoch, int, double loss, double val_top1) {
    if (a.verbose) {
      std::printf("  seed %llu %-14s epoch %d loss %.4f val top-1 mean %.4f (%.0f s)\n",
                  static_cast<unsigned long long>(seed), label.c_str(), epoch, loss, val_top1, seconds_since(t0));
      std::fflush(stdout);
    }
    return true;
  });
}

void print_seed_row(std::uint64_t seed, const std::string& label, const tr::TrainResult& r, double cpu_s) {
  const tr::RankingMetrics& mm = r.metrics;
  std::printf(
      "seed %llu %-14s top-1 %.4f/%.4f top-5 %.4f/%.4f pairwise %.4f tuning %.4f (%.2f better) | "
      "floor top-1 %.4f/%.4f top-5 %.4f/%.4f tuning %.4f ± %.4f (%.2f better) | %lld params, %d epochs, %lld "
      "steps%s, train %.1f s, eval %.1f s, cpu %.0f s, final loss %.4f\n",
      static_cast<unsigned long long>(seed), label.c_str(), mm.top1.sum_ratio, mm.top1.mean_ratio, mm.top5.sum_ratio,
      mm.top5.mean_ratio, mm.pairwise_accuracy, mm.tuning.geomean_ratio, mm.tuning.share_better,
      mm.random_top1.sum_ratio, mm.random_top1.mean_ratio, mm.random_top5.sum_ratio, mm.random_top5.mean_ratio,
      mm.random_tuning.geomean_ratio, mm.random_tuning.geomean_sd, mm.random_tuning.share_better,
      static_cast<long long>(r.num_parameters), r.epochs_done, static_cast<long long>(r.steps),
      r.budget_exhausted ? " (budget hit)" : "", r.train_s, r.eval_s, cpu_s,
      r.epoch_losses.empty() ? NAN : r.epoch_losses.back());
  std::fflush(stdout);
}

// DIR/seed_<s>_<label>.csv: task,latency,label,score per eval program.
void dump_scores(const std::string& dir, std::uint64_t seed, const std::string& label, const tr::Dataset& ds,
                 const std::vector<float>& scores) {
  std::string file = dir + "/seed_" + std::to_string(seed) + "_" + label + ".csv";
  for (char& ch : file) ch = ch == ':' || ch == ' ' ? '-' : ch;
  std::FILE* f = std::fopen(file.c_str(), "w");
  if (f == nullptr) return;
  std::fprintf(f, "task,latency,label,score\n");
  for (std::int64_t i = 0; i < ds.eval.count; ++i) {
    const auto k = static_cast<std::size_t>(i);
    std::fprintf(f, "%lld,%.9g,%.6g,%.9g\n", static_cast<long long>(ds.eval.groups[k]), ds.eval.latencies[k],
                 ds.eval.labels[k], scores[k]);
  }
  std::fclose(f);
}

// DIR/seed_<s>_tasks.tsv: task, canonical workload key, once per seed (the
// dumps' task ids; scripts/gpu/task_errors.py reads both).
void dump_tasks(const std::string& dir, std::uint64_t seed, const tr::Dataset& ds) {
  std::FILE* t = std::fopen((dir + "/seed_" + std::to_string(seed) + "_tasks.tsv").c_str(), "w");
  if (t == nullptr) return;
  std::fprintf(t, "task\tkey\n");
  for (std::size_t g = 0; g < ds.task_keys.size(); ++g) std::fprintf(t, "%zu\t%s\n", g, ds.task_keys[g].c_str());
  std::fclose(t);
}

}  // namespace

constexpr std::uint64_t kValidationSalt = 0x7A11DA7E;
// Member k of an --ensemble trains with seed + k · kMemberSeedStride: far from
// the next seeds, so no member repeats another seed's run.
constexpr std::uint64_t kMemberSeedStride = 1'000'003;

using Rows = std::map<std::string, std::vector<Row>>;

// Model m trained a.ensemble times on `ds` (member k with seed + k ·
// kMemberSeedStride); a row per member, and from the second member on a row
// "NAME xk" for the first k members together (their cost summed). The first
// member's row is NAME's, and the first model's floor is the random floor's.
bool train_members(const Args& a, const ModelSpec& m, const tr::Dataset& ds, std::uint64_t seed, Clock::time_point t0,
                   Rows* rows) {
  std::vector<std::vector<float>> members;
  double train_s = 0, cpu_s = 0;  // of the members so far
  for (int k = 0; k < a.ensemble; ++k) {
    const std::string label = k == 0 ? m.name : m.name + " member " + std::to_string(k + 1);
    const double cpu0 = cpu_seconds();
    auto result = train_one(a, m, ds, seed + static_cast<std::uint64_t>(k) * kMemberSeedStride, label, t0);
    if (!result) {
      std::fprintf(stderr, "%s: %s\n", label.c_str(), result.status().to_string().c_str());
      return false;
    }
    const double member_cpu_s = cpu_seconds() - cpu0;
    print_seed_row(seed, label, *result, member_cpu_s);
    if (!a.dump.empty()) dump_scores(a.dump, seed, label, ds, result->eval_scores);
    train_s += result->train_s;
    cpu_s += member_cpu_s;
    members.push_back(std::move(result->eval_scores));
    if (k == 0) {
      (*rows)[m.name].push_back(row_of(*result));
      (*rows)[m.name].back().cpu_s = cpu_s;
      if (&m == &a.models.front()) (*rows)["random floor"].push_back(floor_of(result->metrics));
      continue;
    }
    const std::string name = m.name + " x" + std::to_string(k + 1);
    tr::TrainResult together = std::move(*result);  // its shape; the scores and costs are the ensemble's
    together.eval_scores = tr::ensemble_scores(ds.eval.groups, members);
    together.metrics = tr::evaluate_ranking(ds.eval.groups, ds.eval.latencies, together.eval_scores);
    together.num_parameters *= k + 1;
    together.steps *= k + 1;
    together.train_s = train_s;
    together.epoch_losses.clear();
    print_seed_row(seed, name, together, cpu_s);
    if (!a.dump.empty()) dump_scores(a.dump, seed, name, ds, together.eval_scores);
    (*rows)[name].push_back(row_of(together));
    (*rows)[name].back().cpu_s = cpu_s;
  }
  return true;
}

// With --validation: `records` reordered so that the seed's held-out tasks
// come last, and the rest returned. Without it: all of them.
std::span<const core::Record> training_tasks_only(const Args& a, std::uint64_t seed,
                                                  std::vector<core::Record>& records) {
  if (a.validation <= 0) return records;
  const auto rest = std::stable_partition(records.begin(), records.end(), [&](const core::Record& r) {
    return !core::in_holdout(core::canonical_workload_key(r.workload_key), a.eval_fraction, seed);
  });
  std::printf(
      "seed %llu: validation mode: %zu of %zu records kept (held-out tasks dropped); scoring %.2f of the rest\n",
      static_cast<unsigned long long>(seed), static_cast<std::size_t>(rest - records.begin()), records.size(),
      a.validation);
  return {records.data(), static_cast<std::size_t>(rest - records.begin())};
}

int main(int argc, char** argv) {
  Args a;
  if (!parse_args(argc, argv, &a)) return 2;
  const Clock::time_point t0 = Clock::now();

  std::string path = a.data;
  if (std::filesystem::is_directory(path)) path += "/records.jsonl.gz";
  std::vector<core::Record> records;
  std::int64_t bad = 0;
  if (!tcl::bench::load_records(path, &records, 0, {}, &bad)) return 1;
  auto platform = tr::platform_of(records);
  if (!platform) {
    std::fprintf(stderr, "%s\n", platform.status().to_string().c_str());
    return 1;
  }
  std::printf("# bench_quality %s\n", path.c_str());
  std::printf("records: %zu (%lld unparseable), loaded in %.1f s; target: %s\n", records.size(),
              static_cast<long long>(bad), seconds_since(t0), platform->target.c_str());
  if (a.job) return run_job(a, records, *platform);
  std::printf(
      "budget per model and seed: max_records %lld (%s), max_eval_records %lld, epochs %d, "
      "time budget %.0f s, threads %d; eval fraction %.2f of tasks, salt = seed\n",
      static_cast<long long>(a.max_records),
      a.sampling == tr::RecordSampling::kTasks ? "whole tasks" : "share of every task",
      static_cast<long long>(a.max_eval_records), a.epochs, a.time_budget, a.threads, a.eval_fraction);
  std::fflush(stdout);

  std::vector<std::string> names;
  for (const ModelSpec& m : a.models) {
    names.push_back(m.name);
    for (int k = 2; k <= a.ensemble; ++k) names.push_back(m.name + " x" + std::to_string(k));
  }
  names.push_back("random floor");
  Rows rows;

  for (int s = 0; s < a.seeds; ++s) {
    const std::uint64_t seed = a.seed_base + static_cast<std::uint64_t>(s);
    const std::span<const core::Record> seen = training_tasks_only(a, seed, records);
    std::map<tr::TokenEncoding, tr::Dataset> datasets;
    for (const ModelSpec& m : a.models) {
      if (datasets.count(m.encoding) != 0) continue;
      tr::DatasetOptions o;
      o.encoding = m.encoding;
      o.max_len = a.max_len;
      o.eval_fraction = a.validation > 0 ? a.validation : a.eval_fraction;
      o.split_salt = a.validation > 0 ? seed + kValidationSalt : seed;
      o.max_records = a.max_records;
      o.max_eval_records = a.max_eval_records;
      o.sampling = a.sampling;
      o.sample_seed = seed;
      const Clock::time_point tb = Clock::now();
      auto ds = tr::build_dataset(seen, *platform, o);
      if (!ds) {
        std::fprintf(stderr, "%s\n", ds.status().to_string().c_str());
        return 1;
      }
      const tr::DatasetSummary& d = ds->summary;
      std::printf(
          "seed %llu, %s data: %lld measured, %lld failed; train %lld tasks / %lld programs, "
          "eval %lld tasks / %lld programs, L=%lld (%.1f s)\n",
          static_cast<unsigned long long>(seed), std::string(tr::token_encoding_name(m.encoding)).c_str(),
          static_cast<long long>(d.measured), static_cast<long long>(d.failed), static_cast<long long>(d.train_tasks),
          static_cast<long long>(d.train_records), static_cast<long long>(d.eval_tasks),
          static_cast<long long>(d.eval_records), static_cast<long long>(ds->seq_len), seconds_since(tb));
      datasets.emplace(m.encoding, std::move(*ds));
    }
    // Every encoding keeps the same tasks, in the same order.
    if (!a.dump.empty()) dump_tasks(a.dump, seed, datasets.begin()->second);
    for (const ModelSpec& m : a.models) {
      if (!train_members(a, m, datasets.at(m.encoding), seed, t0, &rows)) return 1;
    }
  }
  std::printf(
      "\n%d seeds (%llu..%llu), mean ± sample sd; top-k sum = Σbest/Σbest-in-top-k, "
      "mean = mean over tasks of best/best-in-top-k; tuning proxy = geometric mean over tasks of the "
      "trials to a program within 5%% of the best / random order's (n+1)/(g+1), lower is better.\n",
      a.seeds, static_cast<unsigned long long>(a.seed_base),
      static_cast<unsigned long long>(a.seed_base + static_cast<std::uint64_t>(a.seeds) - 1));
  print_table(names, rows);
  std::printf("\ntotal wall time %.0f s\n", seconds_since(t0));
  return 0;
}
