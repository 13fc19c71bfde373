// bench_onboarding — DESIGN §10 "data efficiency" for onboarding a platform
// (issue 5 item 6) on real records: a base student trained on x86-24c is
// fine-tuned on a budget of another platform's measurements picked by the RDU
// sampler (DESIGN §6) or a baseline, and scored on that platform's held-out
// tasks.
//
//   1. Base: the default student trained on x86-24c (trainer::train_platform,
//      --base-max-records programs, --base-epochs, seed 1, threads --threads,
//      no time budget). Its checkpoint bytes are cached in --base-checkpoint
//      (loaded when the file exists; written whole or not at all,
//      core/files.h). --base-platforms x86-24c,gpu-2080ti: a
//      lineage that knows more platforms, trained jointly (JointTraining, the
//      first platform primary); their descriptors are then the round's others.
//      --target / --hardware-params register every target platform with
//      those facts instead of its records' (and its descriptor follows).
//   2. Per target platform (x86-16c, gpu-2080ti), the evaluation protocol's
//      split (onboarding/platform_data.h): tasks split by
//      core::in_holdout(canonical key, --holdout, --split-salt); pool = the
//      measured records of the other tasks, one per program (core::program_id);
//      evaluation set = every measured record of the held-out tasks.
//   3. Embeddings and uncertainty of the pool as the daemon's sample request
//      computes them (onboarding/round.h, the same code): trainer::PoolEmbedder
//      with the base (fast path), this platform's descriptor, others =
//      the base platforms' descriptors, --mc-samples, seed = the run's seed.
//   4. Per fraction f and strategy (rdu, random, r, d, u): onboarding::select_round
//      with budget onboarding::budget_of_fraction(f, pool), min_per_task 2, --weights (rdu); then the
//      base is fine-tuned on the picked records only (init_checkpoint = base,
//      no eval split, --ft-epochs (more when --ft-min-steps asks), --ft-lr,
//      seed) and scored on the held-out
//      tasks with trainer::evaluate_ranking (TenSet top-1/top-5: sum ratio and
//      mean over tasks; pairwise accuracy; the tuning proxy; the random-order
//      floor). Reference
//      rows: the whole pool (f = 1) and the base without fine-tuning.
//      --ft-auto-schedule: per fine-tune, the choice FineTune::auto_schedule
//      makes (trainer::zero_shot_fit: the base's pairwise accuracy on the
//      picked programs against a coin's 0.5): the flags as given, or with the long schedule's
//      floors; the run is also logged under that explicit schedule's key.
//      --rounds 2: the budget in two halves; after the first, the base is
//      fine-tuned on it (the active column), which then scores the remaining
//      pool with the base as reference and the first picks as measured (the
//      daemon's second request); the final model is the base fine-tuned on
//      both halves. random always picks in one round (two draw from the same
//      distribution). With --ft-auto-schedule the column's schedule follows
//      the zero-shot check on what is measured so far. --column-auto: the
//      column only where the base orders those programs no better than a
//      coin (the same check); elsewhere the base picks the next round too,
//      the earlier picks counted as measured.
//   5. --timing: seconds for sampler::select to pick --timing-fraction of a
//      --timing-pool-program pool of x86-24c programs (seeded sample), after
//      PoolEmbedder embedded it (embedding timed apart), per strategy.
//
// Every finished fine-tune is appended to --out/runs.tsv (a run log,
// onboarding/run_log.h), keyed by platform, seed, strategy, fraction and the
// settings that shape it (base checkpoint sha256, split, epochs, lr, weights,
// rounds, ...); a rerun skips what is there, so a killed run resumes. Tables
// (mean ± sample sd over the seeds found) are printed per platform from that
// file.
//
//   bench_onboarding --base-checkpoint PATH [--data DIR] [--out DIR]
//       [--base-platforms x86-24c[,gpu-2080ti]] [--target T] [--hardware-params N,...(8)]
//       [--platform x86-16c,gpu-2080ti] [--seeds 1] [--seed-base 1]
//       [--fractions 0.05,0.1,0.2] [--strategies rdu,random,r,d,u,fast,uniform] [--no-full]
//       [--base-max-records 40000] [--base-epochs 4] [--ft-epochs 6] [--ft-min-steps 0] [--ft-lr 0.002]
//       [--ft-validation 0] [--ft-validation-by programs|tasks] [--ft-patience 0] [--ft-refit]
//       [--ft-auto-schedule] [--pick-percentiles]
//       [--trace-epochs] [--wise 0.5,0.75]
//       [--weights 0,1,1] [--rounds 1|2] [--column-auto] [--holdout 0.3] [--split-salt 5]
//       [--mc-samples 8] [--min-per-task 2] [--random-share 0] [--threads 2] [--device auto|cpu|cuda]
//   bench_onboarding --base-checkpoint PATH --report 6,7,8,9 [the flags of the runs]
//       (no training: the logged runs over those splits, with 95% bootstrap
//       intervals over seeds for rdu/100% and rdu − random; see run_report)
//   bench_onboarding --base-sha 12HEX --report 6,7,8,9 [the flags of the runs]
//       (the same, for runs whose base checkpoint is not at hand: the base=
//       field of their runs.tsv lines names it)
//   bench_onboarding --repeatability [--platform ...] [--data DIR]
//       (no model: how well each record's repeated measurements agree with
//       themselves, the ceiling of any model's ordering; see run_repeatability)
//   bench_onboarding --base-checkpoint PATH --timing [--timing-pool 100000]
//       [--timing-fraction 0.1] [--strategies rdu,random] [--data DIR]
//
// --data holds one folder per platform with records.jsonl.gz (default
// /work/shared/data); --out defaults to /tmp/onboarding.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/features.h"
#include "core/files.h"
#include "core/platform.h"
#include "core/line_reader.h"
#include "core/program_id.h"
#include "core/record.h"
#include "core/sha256.h"
#include "core/task_split.h"
#include "sampler/rdu.h"
#include "trainer/cost_model.h"
#include "trainer/dataset.h"
#include "bench/lib/device_arg.h"
#include "bench/lib/timing.h"
#include "bench/lib/flags.h"
#include "bench/lib/records.h"
#include "trainer/device.h"
#include "trainer/evaluation.h"
#include "trainer/fast_inference.h"
#include "bench/lib/platform_data.h"
#include "onboarding/platform_data.h"
#include "onboarding/round.h"
#include "onboarding/run_log.h"
#include "trainer/pool_embedding.h"
#include "trainer/train_job.h"

namespace {

namespace core = tcl::core;
namespace tr = tcl::trainer;
namespace sampler = tcl::sampler;
using Clock = std::chrono::steady_clock;
using tcl::Result;
using tcl::Status;
using tcl::bench::seconds_since;
using tcl::onboarding::descriptor_vector;
using tcl::onboarding::PlatformData;

constexpr const char* kBasePlatform = "x86-24c";
constexpr std::uint64_t kBaseSeed = 1;

struct Args {
  std::string data = "/work/shared/data";
  std::string out = "/tmp/onboarding";
  std::string base_checkpoint;
  std::string base_sha;  // --base-sha: --report without the checkpoint (the first 12 hex digits suffice)
  // The lineage the base knows: trained on the first, jointly with the rest
  // (trainer::JointTraining); their descriptors are the sample request's others.
  std::vector<std::string> base_platforms = {kBasePlatform};
  std::vector<std::string> platforms = {"x86-16c", "gpu-2080ti"};
  // Every target platform registered with this target and these 8 hardware
  // params instead of what its records carry (empty: the records').
  std::string target_override;
  std::vector<double> hardware_override;  // integers, read as a list of numbers
  int seeds = 1;
  std::uint64_t seed_base = 1;
  std::vector<double> fractions = {0.05, 0.10, 0.20};
  std::vector<sampler::Strategy> strategies;
  bool full = true;
  std::int64_t base_max_records = 40'000;
  int base_epochs = 4;
  int ft_epochs = 6;
  std::int64_t ft_min_steps = 0;     // Optimisation::min_steps of every fine-tune
  double ft_validation = 0;          // DatasetOptions::validation_fraction of every fine-tune
  int ft_patience = 0;               // Optimisation::patience
  bool ft_validation_tasks = false;  // DatasetOptions::validation_split = kTasks
  bool ft_refit = false;             // TrainData::refit
  bool ft_auto_schedule = false;     // FineTune::auto_schedule, decided here per run (see fine_tune_and_score)
  bool column_auto = false;          // rounds after the first: the active column only for a far platform
  bool pick_percentiles = false;     // print where each selection's picks sit in their tasks' latency order
  bool trace_epochs = false;         // print validation and held-out top-1 per epoch
  std::vector<double> wise;          // also score (1 − α)·base + α·fine-tune for each α (not cached)
  double ft_lr = tr::TrainRequest{}.optimisation.learning_rate;
  sampler::Weights weights;
  int rounds = 1;
  double holdout = 0.3;
  std::uint64_t split_salt = 5;
  int mc_samples = 8;
  int min_per_task = 2;
  double random_share = 0;  // sampler::SampleOptions::random_share for rdu, r, d, u
  int threads = 2;
  tr::Device device = tr::Device::kAuto;  // --device: where every model trains
  bool timing = false;
  bool repeatability = false;  // the measurements' own agreement with themselves, no model (run_repeatability)
  std::vector<std::uint64_t> report_salts;  // --report: no runs, the log's figures over these splits
  std::int64_t timing_pool = 100'000;
  double timing_fraction = 0.1;
};

using tcl::bench::split_list;

// --weights R,D,U into *out; false, with a message, unless three values.
bool read_weights(const std::string& v, sampler::Weights* out) {
  std::vector<double> w;
  for (const std::string& x : split_list(v)) w.push_back(std::atof(x.c_str()));
  if (w.size() != 3) {
    std::fprintf(stderr, "--weights takes R,D,U\n");
    return false;
  }
  *out = {w[0], w[1], w[2]};
  return true;
}

// --report S[,S...] appended to *salts; false, with a message, unless
// whole numbers, at least one.
bool read_report_salts(const std::string& v, std::vector<std::uint64_t>* salts) {
  for (const std::string& x : split_list(v)) {
    char* end = nullptr;
    const std::uint64_t salt = std::strtoull(x.c_str(), &end, 10);
    if (x.empty() || *end != '\0') {
      std::fprintf(stderr, "--report takes split salts, e.g. 6,7,8,9 (got '%s')\n", v.c_str());
      return false;
    }
    salts->push_back(salt);
  }
  if (salts->empty()) {
    std::fprintf(stderr, "--report takes split salts, e.g. 6,7,8,9\n");
    return false;
  }
  return true;
}

// --ft-validation-by tasks|programs into *tasks.
bool read_validation_by(const std::string& v, bool* tasks) {
  if (v != "tasks" && v != "programs") {
    std::fprintf(stderr, "--ft-validation-by takes tasks or programs\n");
    return false;
  }
  *tasks = v == "tasks";
  return true;
}

// The flags into *a; --strategies and --no-full into the two locals that
// finish_args reads.
void declare_flags(tcl::bench::Flags& flags, Args* a, std::string* strategies, bool* no_full) {
  flags.flag("timing", &a->timing)
      .flag("no-full", no_full)
      .flag("trace-epochs", &a->trace_epochs)
      .flag("ft-refit", &a->ft_refit)
      .flag("ft-auto-schedule", &a->ft_auto_schedule)
      .flag("column-auto", &a->column_auto)
      .flag("pick-percentiles", &a->pick_percentiles)
      .flag("repeatability", &a->repeatability)
      .value("data", &a->data)
      .value("out", &a->out)
      .value("base-checkpoint", &a->base_checkpoint)
      .value("base-sha", &a->base_sha)
      .list("base-platforms", &a->base_platforms)
      .value("target", &a->target_override)
      .list("hardware-params", &a->hardware_override)
      .list("platform", &a->platforms)
      .value("seeds", &a->seeds)
      .value("seed-base", &a->seed_base)
      .list("fractions", &a->fractions)
      .value("strategies", strategies)
      .value("base-max-records", &a->base_max_records)
      .value("base-epochs", &a->base_epochs)
      .value("ft-epochs", &a->ft_epochs)
      .value("ft-min-steps", &a->ft_min_steps)
      .value("ft-validation", &a->ft_validation)
      .value("ft-patience", &a->ft_patience)
      .custom("ft-validation-by", [a](const std::string& v) { return read_validation_by(v, &a->ft_validation_tasks); })
      .list("wise", &a->wise)
      .value("ft-lr", &a->ft_lr)
      .custom("weights", [a](const std::string& v) { return read_weights(v, &a->weights); })
      .value("rounds", &a->rounds)
      .value("holdout", &a->holdout)
      .value("split-salt", &a->split_salt)
      .value("mc-samples", &a->mc_samples)
      .value("min-per-task", &a->min_per_task)
      .value("random-share", &a->random_share)
      .value("threads", &a->threads)
      .custom("device", tcl::bench::device_arg(&a->device))
      .value("timing-pool", &a->timing_pool)
      .value("timing-fraction", &a->timing_fraction)
      .custom("report", [a](const std::string& v) { return read_report_salts(v, &a->report_salts); });
}

// --strategies (default: every one, or rdu,random with --timing) into
// a->strategies; false, with a message, on an unknown name.
bool read_strategies(std::string strategies, Args* a) {
  if (strategies.empty()) strategies = a->timing ? "rdu,random" : "rdu,random,r,d,u";
  for (const std::string& s : split_list(strategies)) {
    auto st = sampler::parse_strategy(s);
    if (!st) {
      std::fprintf(stderr, "unknown strategy '%s' (rdu, random, r, d, u, fast, uniform)\n", s.c_str());
      return false;
    }
    a->strategies.push_back(*st);
  }
  return true;
}

// --report with --base-sha: the runs' log alone, no checkpoint, no model.
bool report_from_log(const Args& a) { return !a.report_salts.empty() && !a.base_sha.empty(); }

// The checks across flags, once parsed; false, with a message (or the
// usage), when they do not fit together.
bool check_args(const Args& a) {
  if (a.base_checkpoint.empty() && !a.repeatability && !report_from_log(a)) {
    std::fprintf(stderr,
                 "usage: bench_onboarding --base-checkpoint PATH [--platform x86-16c,gpu-2080ti] [--seeds 1]\n"
                 "       [--fractions 0.05,0.1,0.2] [--strategies rdu,random,r,d,u] [--ft-epochs 6] ...\n"
                 "       bench_onboarding --base-checkpoint PATH | --base-sha HEX --report 6,7,8 [the runs' flags]\n"
                 "       bench_onboarding --base-checkpoint PATH --timing [--timing-pool 100000]\n"
                 "       bench_onboarding --repeatability [--platform x86-24c,x86-16c,gpu-2080ti]\n"
                 "       (see bench/onboarding.cc)\n");
    return false;
  }
  if (!(a.random_share >= 0 && a.random_share <= 1)) {
    std::fprintf(stderr, "--random-share takes a share in [0, 1]\n");
    return false;
  }
  if (a.rounds < 1 || a.rounds > 8 || a.seeds < 1 || a.ft_epochs < 1 || a.mc_samples < 2 ||
      !(a.holdout > 0 && a.holdout < 1)) {
    std::fprintf(stderr, "bad --rounds, --seeds, --ft-epochs, --mc-samples or --holdout\n");
    return false;
  }
  if (a.column_auto && a.rounds < 2) std::fprintf(stderr, "note: --column-auto does nothing with one round\n");
  if (!a.base_sha.empty()) {
    // The runs' keys hold the hash's first 12 digits and device=cuda for GPU runs: a report that
    // guessed either would print empty tables without a word.
    const bool hex = a.base_sha.find_first_not_of("0123456789abcdef") == std::string::npos;
    if (a.report_salts.empty() || !a.base_checkpoint.empty() || a.base_sha.size() < 12 || !hex ||
        a.device == tr::Device::kAuto) {
      std::fprintf(stderr,
                   "--base-sha takes the base= field of runs.tsv (12+ hex digits), with --report and --device "
                   "cpu|cuda, without --base-checkpoint\n");
      return false;
    }
  }
  return true;
}

bool parse_args(int argc, char** argv, Args* a) {
  std::string strategies;
  bool no_full = false;
  tcl::bench::Flags flags;
  declare_flags(flags, a, &strategies, &no_full);
  if (!flags.parse(argc, argv)) return false;
  a->full = !no_full;
  // A report from the log alone trains nothing: --device only names the runs' tag (device=cuda on a
  // machine without CUDA).
  return tcl::bench::check_hardware_arg(a->hardware_override) &&
         (report_from_log(*a) || tcl::bench::resolve_device_arg(&a->device)) && read_strategies(strategies, a) &&
         check_args(*a);
}

std::string records_path(const Args& a, const std::string& platform) {
  return a.data + "/" + platform + "/records.jsonl.gz";
}

// The platform of a file's records, from its first records only.
Result<tr::Platform> platform_of_file(const std::string& path) {
  std::vector<core::Record> head;
  if (!tcl::bench::load_records(path, &head, 100)) return Status::not_found(path + ": unreadable");
  return tr::platform_of(head);
}

// A model version as the daemon serves it: the facade and the fast path.
struct Loaded {
  std::unique_ptr<tr::CostModel> model;
  std::unique_ptr<tr::StudentInference> fast;
  tr::ServedModel served() const { return {model.get(), fast.get()}; }
};

Result<Loaded> load_model(std::string_view checkpoint, int threads) {
  auto model = tr::CostModel::load(checkpoint);
  if (!model) return model.status();
  auto fast = tr::StudentInference::create(**model, tr::InferenceOptions{.threads = threads});
  if (!fast) return fast.status();
  return Loaded{std::move(*model), std::move(*fast)};
}

// ---------------------------------------------------------------------------
// Results, one line per finished run, appended as they finish.

struct Outcome {
  std::int64_t picked = 0;
  double top1_sum = 0, top1_mean = 0, top5_sum = 0, top5_mean = 0, pairwise = 0;
  double floor1_sum = 0, floor1_mean = 0;
  double ft_s = 0, select_s = 0;
  // The tuning proxy (trainer/evaluation.h): geometric mean ratio and share of
  // tasks better than random, of the model and of random orders; NAN for a
  // runs.tsv line written before these columns.
  double tuning = NAN, tuning_better = NAN, floor_tuning = NAN, floor_tuning_better = NAN;
};

// The run log (onboarding/run_log.h) read as Outcomes. A line's values: the
// ten first columns, then the four tuning columns (absent from older lines).
// A run logged by this process keeps its exact values (its line rounds them).
class OutcomeLog {
 public:
  explicit OutcomeLog(std::string path) : log_(std::move(path)) {
    for (const auto& [key, values] : log_.runs()) {
      std::istringstream vals(values);
      Outcome o;
      vals >> o.picked >> o.top1_sum >> o.top1_mean >> o.top5_sum >> o.top5_mean >> o.pairwise >> o.floor1_sum >>
          o.floor1_mean >> o.ft_s >> o.select_s;
      if (!vals) continue;
      Outcome t = o;  // the tuning columns, when the line has them
      if (vals >> t.tuning >> t.tuning_better >> t.floor_tuning >> t.floor_tuning_better) o = t;
      runs_[key] = o;
    }
  }
  const Outcome* find(const std::string& key) const {
    auto it = runs_.find(key);
    return it == runs_.end() ? nullptr : &it->second;
  }
  void add(const std::string& key, const Outcome& o) {
    runs_[key] = o;
    char values[512];
    std::snprintf(values, sizeof values, "%lld %.6f %.6f %.6f %.6f %.6f %.6f %.6f %.3f %.4f %.6f %.6f %.6f %.6f",
                  static_cast<long long>(o.picked), o.top1_sum, o.top1_mean, o.top5_sum, o.top5_mean, o.pairwise,
                  o.floor1_sum, o.floor1_mean, o.ft_s, o.select_s, o.tuning, o.tuning_better, o.floor_tuning,
                  o.floor_tuning_better);
    if (Status s = log_.add(key, values); !s) std::fprintf(stderr, "%s\n", s.to_string().c_str());
  }

 private:
  tcl::onboarding::RunLog log_;
  std::map<std::string, Outcome> runs_;
};

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

// Keys: "platform|seed|strategy|fraction|settings".
// A run's key holds only the settings that can change it: random's picks
// ignore the weights, the rounds (it always picks in one round: two rounds
// draw from the same distribution) and the MC samples; r, d and u ignore the
// weights.
struct Tags {
  std::string zero_shot;       // base + split
  std::string full;            // + fine-tune settings
  std::string selection;       // + sampler settings (rdu's)
  std::string single, random;  // r/d/u's, random's
  const std::string& of(sampler::Strategy s) const {
    return s == sampler::Strategy::kRdu ? selection : !sampler::uses_model(s) ? random : single;
  }
  const std::string& of(std::string_view name) const { return of(*sampler::parse_strategy(name)); }
};

Tags tags_of(const Args& a, const std::string& base_sha) {
  Tags t;
  std::string lineage;  // what the runs' platforms are registered as, besides the base
  for (std::size_t i = 1; i < a.base_platforms.size(); ++i)
    lineage += (i == 1 ? " others=" : ",") + a.base_platforms[i];
  if (!a.target_override.empty()) lineage += " target=\"" + a.target_override + "\"";
  for (std::size_t i = 0; i < a.hardware_override.size(); ++i) {
    lineage += (i == 0 ? " hardware=" : ",") + std::to_string(static_cast<std::int64_t>(a.hardware_override[i]));
  }
  t.zero_shot = "base=" + base_sha.substr(0, 12) + " holdout=" + fmt("%g", a.holdout) +
                " salt=" + std::to_string(a.split_salt) + lineage;
  t.full = t.zero_shot + " ft_epochs=" + std::to_string(a.ft_epochs) + " lr=" + fmt("%g", a.ft_lr) +
           (a.ft_min_steps > 0 ? " min_steps=" + std::to_string(a.ft_min_steps) : std::string()) +
           (a.ft_validation > 0
                ? " validation=" + fmt("%g", a.ft_validation) + " patience=" + std::to_string(a.ft_patience) +
                      (a.ft_validation_tasks ? " by=tasks" : "") + (a.ft_refit ? " refit" : "")
                : std::string()) +
           (a.ft_auto_schedule ? " schedule=auto" : "") +
           (a.device == tr::Device::kCuda ? " device=cuda" : "");  // logged apart from CPU runs
  const std::string min_per_task = " min_per_task=" + std::to_string(a.min_per_task);
  // Two rounds: --column-auto, or --ft-auto-schedule alone (since session 7
  // the column follows the check; before, it ran on the flags as given).
  const std::string column = a.rounds < 2         ? ""
                             : a.column_auto      ? " column=auto"
                             : a.ft_auto_schedule ? " column_schedule=auto"
                                                  : "";
  const std::string model_based =
      " rounds=" + std::to_string(a.rounds) + " mc=" + std::to_string(a.mc_samples) + column;
  const std::string random_share = a.random_share > 0 ? " random_share=" + fmt("%g", a.random_share) : "";
  t.selection = t.full + " w=" + fmt("%g", a.weights.r) + "," + fmt("%g", a.weights.d) + "," + fmt("%g", a.weights.u) +
                model_based + min_per_task + random_share;
  t.single = t.full + model_based + min_per_task + random_share;
  t.random = t.full + min_per_task;
  return t;
}

std::string run_key(const std::string& platform, std::uint64_t seed, std::string_view strategy, double fraction,
                    const std::string& tag) {
  return platform + "|" + std::to_string(seed) + "|" + std::string(strategy) + "|" + fmt("%g", fraction) + "|" + tag;
}

// ---------------------------------------------------------------------------
// One target platform's data.

// The platform's records, split by the evaluation protocol
// (onboarding/platform_data.h), and its held-out records tokenised once into
// `eval` (eval->train = the held-out programs), as every model is scored on them.
bool load_platform(const Args& a, const std::string& name, int max_len, PlatformData* p, tr::Dataset* eval) {
  const Clock::time_point t0 = Clock::now();
  auto data = tcl::bench::read_platform(records_path(a, name), name, a.holdout, a.split_salt);
  if (!data) return false;
  *p = std::move(*data);
  p->platform = tcl::bench::registered_as(p->platform, a.target_override, a.hardware_override);
  p->descriptor = tcl::onboarding::descriptor_vector(p->platform);
  const tcl::onboarding::PlatformSplit& s = p->split;
  tr::DatasetOptions o;
  o.eval_fraction = 0;
  o.max_len = max_len;
  auto ds = tr::build_dataset(s.holdout, p->platform, o);
  if (!ds) {
    std::fprintf(stderr, "%s held-out set: %s\n", name.c_str(), ds.status().to_string().c_str());
    return false;
  }
  *eval = std::move(*ds);
  std::printf(
      "%s: %lld records, %lld measured; pool %zu programs in %zu tasks (%lld duplicate programs dropped); "
      "held out %lld tasks, %zu records, evaluated %lld programs in %lld tasks (L=%lld); target %s (%.1f s)\n",
      name.c_str(), static_cast<long long>(p->records), static_cast<long long>(s.measured), s.pool.size(),
      s.task_keys.size(), static_cast<long long>(s.pool_duplicates), static_cast<long long>(s.holdout_tasks),
      s.holdout.size(), static_cast<long long>(eval->train.count), static_cast<long long>(eval->train.tasks),
      static_cast<long long>(eval->seq_len), p->platform.target.c_str(), seconds_since(t0));
  std::fflush(stdout);
  return true;
}

// Top-1/top-5 of a model on the held-out tasks.
Result<tr::RankingMetrics> evaluate(const Loaded& m, const tr::Dataset& ds) {
  const tr::DatasetSplit& s = ds.train;
  tr::FeatureBatch batch{s.count, ds.seq_len, s.tokens, s.lengths, ds.descriptor};
  std::vector<float> scores(static_cast<std::size_t>(s.count));
  if (Status st = m.fast->predict(batch, scores); !st) return st;
  return tr::evaluate_ranking(s.groups, s.latencies, scores);
}

// The base fine-tuned on `records` (the selected measurements).
// The fine-tune of `records` as asked by the flags (trace aside).
tr::TrainRequest finetune_request(const Args& a, const std::string& base, const PlatformData& p,
                                  std::span<const core::Record> records, std::uint64_t seed) {
  tr::TrainRequest req;
  req.data.records = records;
  req.data.platform = p.platform;
  req.data.options = tr::DatasetOptions{};
  req.data.options.eval_fraction = 0;  // the held-out tasks are scored outside
  req.data.options.validation_fraction = a.ft_validation;
  req.data.options.sample_seed = seed;
  req.start = tr::FineTune{.init_checkpoint = base};
  req.optimisation.epochs = a.ft_epochs;
  req.optimisation.min_steps = a.ft_min_steps;
  req.optimisation.patience = a.ft_patience;
  req.data.refit = a.ft_refit;
  if (a.ft_validation_tasks) req.data.options.validation_split = tr::ValidationSplit::kTasks;
  req.optimisation.learning_rate = a.ft_lr;
  req.optimisation.seed = seed;
  req.resources.threads = a.threads;
  req.resources.device = a.device;
  req.resources.time_budget_s = 0;
  req.resources.eval_each_epoch = false;
  req.fisher.compute = false;  // for distillation only; does not change the weights
  return req;
}

// The flags with TrainRequest's long schedule applied (what auto_schedule
// does to a request whose platform is far from the base), and without them.
Args long_schedule_args(Args a) {
  const tr::FineTune::LongSchedule l;
  a.ft_auto_schedule = false;
  if (l.validation_fraction > a.ft_validation) {
    a.ft_validation = l.validation_fraction;
    a.ft_validation_tasks = false;
  }
  a.ft_min_steps = std::max(a.ft_min_steps, l.min_steps);
  a.ft_patience = std::max(a.ft_patience, l.patience);
  return a;
}

Result<tr::TrainResult> finetune(const Args& a, const std::string& base, const PlatformData& p,
                                 std::span<const core::Record> records, std::uint64_t seed) {
  tr::TrainRequest req = finetune_request(a, base, p, records, seed);
  if (!a.trace_epochs) return tr::train_platform(req);

  // --trace-epochs: the held-out tasks ride along as the request's eval split
  // (the same tasks: core::in_holdout with the bench's holdout and salt), so
  // the progress callback sees their top-1 after every epoch. Training is
  // unchanged: the training tasks, their validation share and labels are the same.
  std::vector<core::Record> with_holdout(records.begin(), records.end());
  with_holdout.insert(with_holdout.end(), p.split.holdout.begin(), p.split.holdout.end());
  req.data.records = with_holdout;
  req.data.options.eval_fraction = a.holdout;
  req.data.options.split_salt = a.split_salt;
  req.resources.eval_each_epoch = true;
  std::vector<double> losses, held_out;
  auto r = tr::train_platform(req, [&](int, int, double loss, double top1) {
    losses.push_back(loss);
    held_out.push_back(top1);
    return true;
  });
  if (!r) return r;
  std::printf("    epoch  loss     | validation top-1 top-5 pairwise | held-out top-1 (mean ratio)\n");
  // After a refit only the first run's epochs are listed (the refit's follow them).
  const std::size_t rows = r->refitted ? r->epoch_validation.size() : held_out.size();
  for (std::size_t e = 0; e < rows && e < held_out.size(); ++e) {
    const tr::RankingMetrics* v = e < r->epoch_validation.size() ? &r->epoch_validation[e] : nullptr;
    std::printf("    %5zu  %.4f | %.4f %.4f %.4f | %.4f%s\n", e + 1, losses[e], v ? v->top1.mean_ratio : NAN,
                v ? v->top5.mean_ratio : NAN, v ? v->pairwise_accuracy : NAN, held_out[e],
                static_cast<int>(e + 1) == r->best_epoch ? "  <- kept" : "");
  }
  return r;
}

struct Embedded {
  std::unique_ptr<tcl::onboarding::RoundPool> pool;
  double seconds = 0;
};

// The round's pool as the daemon's sample request builds it
// (onboarding/round.h): the pool records `candidates` (with uncertainty),
// then `measured`, scored by `column` with `student` as its reference, or by
// `student` alone when column is null. Tasks are numbered as in `p`.
Result<Embedded> embed(const Args& a, const Loaded& student, const Loaded* column, const PlatformData& p,
                       const std::vector<std::vector<float>>& others, std::span<const std::int64_t> candidates,
                       std::span<const std::int64_t> measured, std::uint64_t seed) {
  const Clock::time_point t0 = Clock::now();
  tcl::onboarding::RoundModels models;
  models.student = student.served();
  if (column) models.column = column->served();
  models.descriptor = p.descriptor;
  models.others = others;
  Embedded e;
  e.pool = std::make_unique<tcl::onboarding::RoundPool>(models, tr::PoolEmbeddingOptions{a.mc_samples, seed});
  for (std::int64_t i : candidates) {
    const auto k = static_cast<std::size_t>(i);
    if (Status s = e.pool->add_candidate(p.split.task[k], p.split.pool[k].steps); !s) return s;
  }
  for (std::int64_t i : measured) {
    const auto k = static_cast<std::size_t>(i);
    if (Status s = e.pool->add_measured(p.split.task[k], p.split.pool[k].steps); !s) return s;
  }
  if (Status s = e.pool->finish(static_cast<std::int32_t>(p.split.task_keys.size())); !s) return s;
  e.seconds = seconds_since(t0);
  return e;
}

// onboarding::select_round over the pool records `candidates` (embedded in
// `e` in that order); returns pool indices.
Result<std::vector<std::int64_t>> select(const Args& a, const Embedded& e, std::span<const std::int64_t> candidates,
                                         sampler::Strategy strategy, std::int64_t budget, std::uint64_t seed,
                                         double* seconds) {
  tcl::onboarding::RoundOptions o;
  o.strategy = strategy;
  o.weights = a.weights;
  o.seed = seed;
  o.min_per_task = a.min_per_task;
  o.random_share = a.random_share;
  const Clock::time_point t0 = Clock::now();
  auto picks = tcl::onboarding::select_round(*e.pool, budget, o);
  *seconds += seconds_since(t0);
  if (!picks) return picks.status();
  std::vector<std::int64_t> out;
  out.reserve(picks->size());
  for (const sampler::Pick& k : *picks) out.push_back(candidates[static_cast<std::size_t>(k.index)]);
  return out;
}

int fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "%s: %s\n", what.c_str(), s.to_string().c_str());
  return 1;
}

Outcome outcome_of(const tr::RankingMetrics& m, std::int64_t picked, double ft_s, double select_s) {
  return {picked,
          m.top1.sum_ratio,
          m.top1.mean_ratio,
          m.top5.sum_ratio,
          m.top5.mean_ratio,
          m.pairwise_accuracy,
          m.random_top1.sum_ratio,
          m.random_top1.mean_ratio,
          ft_s,
          select_s,
          m.tuning.geomean_ratio,
          m.tuning.share_better,
          m.random_tuning.geomean_ratio,
          m.random_tuning.share_better};
}

void print_outcome(const std::string& label, const Outcome& o, bool cached) {
  std::printf(
      "  %-28s n=%-6lld top-1 %.4f/%.4f top-5 %.4f/%.4f pairwise %.4f tuning %.4f (%.2f better) | "
      "floor %.4f/%.4f tuning %.4f (%.2f better) | fine-tune %.1f s, select %.3f s%s\n",
      label.c_str(), static_cast<long long>(o.picked), o.top1_sum, o.top1_mean, o.top5_sum, o.top5_mean, o.pairwise,
      o.tuning, o.tuning_better, o.floor1_sum, o.floor1_mean, o.floor_tuning, o.floor_tuning_better, o.ft_s, o.select_s,
      cached ? " (cached)" : "");
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------
// Tables.

std::string cell(const std::vector<double>& xs, int digits = 3) {
  if (xs.empty()) return "–";
  double mean = 0;
  for (double x : xs) mean += x;
  mean /= static_cast<double>(xs.size());
  char buf[64];
  if (xs.size() == 1) {
    std::snprintf(buf, sizeof buf, "%.*f", digits, mean);
    return buf;
  }
  double var = 0;
  for (double x : xs) var += (x - mean) * (x - mean);
  std::snprintf(buf, sizeof buf, "%.*f ± %.*f", digits, mean, digits,
                std::sqrt(var / static_cast<double>(xs.size() - 1)));
  return buf;
}

double mean_of(const std::vector<double>& xs) {
  return xs.empty() ? NAN : std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
}

// --seed-base, --seed-base + 1, ... (--seeds of them).
std::vector<std::uint64_t> seeds_of(const Args& a) {
  std::vector<std::uint64_t> seeds;
  for (int s = 0; s < a.seeds; ++s) seeds.push_back(a.seed_base + static_cast<std::uint64_t>(s));
  return seeds;
}

void print_tables(const Args& a, const Tags& tags, const OutcomeLog& log, const std::string& platform,
                  std::int64_t pool_size) {
  const std::vector<std::uint64_t> seeds = seeds_of(a);
  const auto values = [&](std::string_view strategy, double f, const std::string& tag, double Outcome::*field) {
    std::vector<double> xs;
    for (std::uint64_t seed : seeds) {
      const Outcome* o = log.find(run_key(platform, seed, strategy, f, tag));
      if (o && !std::isnan(o->*field)) xs.push_back(o->*field);
    }
    return xs;
  };
  std::printf("\n### %s — pool %lld programs, seeds %llu..%llu, %s\n", platform.c_str(),
              static_cast<long long>(pool_size), static_cast<unsigned long long>(seeds.front()),
              static_cast<unsigned long long>(seeds.back()), tags.selection.c_str());
  // Each table with the field of the random-order floor it is held against.
  for (const auto& [title, field, floor_field] :
       {std::tuple{"top-1 sum ratio", &Outcome::top1_sum, &Outcome::floor1_sum},
        std::tuple{"top-1 mean ratio (mean over tasks)", &Outcome::top1_mean, &Outcome::floor1_mean},
        std::tuple{"tuning proxy (geometric mean over tasks of trials to within 5% of the best / random's; < 1 is "
                   "better)",
                   &Outcome::tuning, &Outcome::floor_tuning},
        std::tuple{"tuning proxy: share of tasks better than random", &Outcome::tuning_better,
                   &Outcome::floor_tuning_better}}) {
    std::printf("\n%s\n\n| strategy |", title);
    for (double f : a.fractions) std::printf(" %g%% |", 100 * f);
    std::printf(" 100%% | zero-shot | random-order floor |\n|---|");
    for (std::size_t i = 0; i < a.fractions.size() + 3; ++i) std::printf("---|");
    std::printf("\n");
    const std::string full = cell(values("all", 1.0, tags.full, field));
    const Outcome* z = log.find(run_key(platform, 0, "zero-shot", 0.0, tags.zero_shot));
    const std::string zero = z && !std::isnan(z->*field) ? cell({z->*field}) : "–";
    const std::string floor = z && !std::isnan(z->*floor_field) ? cell({z->*floor_field}) : "–";
    for (sampler::Strategy s : a.strategies) {
      const std::string_view name = sampler::strategy_name(s);
      std::printf("| %.*s |", static_cast<int>(name.size()), name.data());
      for (double f : a.fractions) std::printf(" %s |", cell(values(name, f, tags.of(s), field)).c_str());
      std::printf(" %s | %s | %s |\n", full.c_str(), zero.c_str(), floor.c_str());
    }
  }
  // Cost: programs picked, seconds per fine-tune and per selection.
  std::printf("\nper run (mean over strategies and seeds; fine-tune = %d epochs from the base)\n\n| |", a.ft_epochs);
  for (double f : a.fractions) std::printf(" %g%% |", 100 * f);
  std::printf(" 100%% |\n|---|");
  for (std::size_t i = 0; i <= a.fractions.size(); ++i) std::printf("---|");
  std::printf("\n");
  const auto picked = [](const Outcome& o) { return static_cast<double>(o.picked); };
  const auto ft_s = [](const Outcome& o) { return o.ft_s; };
  const auto select_s = [](const Outcome& o) { return o.select_s; };
  for (const auto& [label, get, format] :
       {std::tuple{"programs", +picked, "%.0f"}, std::tuple{"fine-tune s", +ft_s, "%.0f"},
        std::tuple{"select s", +select_s, "%.2f"}}) {
    std::printf("| %s |", label);
    for (double f : a.fractions) {
      std::vector<double> xs;
      for (sampler::Strategy s : a.strategies) {
        for (std::uint64_t seed : seeds) {
          if (const Outcome* o = log.find(run_key(platform, seed, sampler::strategy_name(s), f, tags.of(s)))) {
            xs.push_back(get(*o));
          }
        }
      }
      std::printf(" %s |", xs.empty() ? "–" : fmt(format, mean_of(xs)).c_str());
    }
    std::vector<double> xs;
    for (std::uint64_t seed : seeds) {
      if (const Outcome* o = log.find(run_key(platform, seed, "all", 1.0, tags.full))) xs.push_back(get(*o));
    }
    std::printf(" %s |\n", xs.empty() || get == +select_s ? "–" : fmt(format, mean_of(xs)).c_str());
  }
  // The issue's targets, at 10% when it was run.
  for (double f : a.fractions) {
    if (std::fabs(f - 0.1) > 1e-9) continue;
    for (const auto& [title, field] : {std::pair{"sum", &Outcome::top1_sum}, std::pair{"mean", &Outcome::top1_mean}}) {
      const double rdu = mean_of(values("rdu", f, tags.selection, field));
      const double rnd = mean_of(values("random", f, tags.random, field));
      const double all = mean_of(values("all", 1.0, tags.full, field));
      std::printf(
          "target (top-1 %s): rdu@10%% %.4f vs random@10%% %.4f → %s; rdu@10%% / 100%% = %.4f/%.4f = %.3f "
          "(≥ 0.95: %s)\n",
          title, rdu, rnd, rdu > rnd ? "rdu beats random" : "rdu does NOT beat random", rdu, all, rdu / all,
          rdu / all >= 0.95 ? "yes" : "no");
    }
  }
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------

// Step 1: the base checkpoint, trained or read from the cache file.
Result<std::string> base_checkpoint(const Args& a) {
  if (std::filesystem::exists(a.base_checkpoint)) {
    std::string bytes;
    if (!tcl::core::read_file(a.base_checkpoint, &bytes)) return Status::not_found(a.base_checkpoint);
    std::printf("base: %s (%zu bytes, cached)\n", a.base_checkpoint.c_str(), bytes.size());
    return bytes;
  }
  const Clock::time_point t0 = Clock::now();
  // records[0] is the primary platform's; the others train jointly with it.
  std::vector<std::vector<core::Record>> records(a.base_platforms.size());
  std::vector<tr::Platform> platforms;
  for (std::size_t i = 0; i < a.base_platforms.size(); ++i) {
    const std::string& name = a.base_platforms[i];
    if (!tcl::bench::load_records(records_path(a, name), &records[i])) return Status::not_found(name + " records");
    auto platform = tr::platform_of(records[i]);
    if (!platform) return platform.status();
    platforms.push_back(*platform);
    std::printf("base: %zu %s records loaded (%.1f s)\n", records[i].size(), name.c_str(), seconds_since(t0));
  }
  std::printf("base: training %lld programs a platform, %d epochs, seed %llu, %d threads\n",
              static_cast<long long>(a.base_max_records), a.base_epochs, static_cast<unsigned long long>(kBaseSeed),
              a.threads);
  std::fflush(stdout);
  tr::TrainRequest req;
  req.data.records = records[0];
  req.data.platform = platforms[0];
  if (platforms.size() > 1) {
    tr::JointTraining joint;
    for (std::size_t i = 1; i < platforms.size(); ++i) joint.platforms.push_back({records[i], platforms[i]});
    req.start = std::move(joint);
  }
  req.data.options.max_records = a.base_max_records;
  req.optimisation.epochs = a.base_epochs;
  req.optimisation.seed = kBaseSeed;
  req.resources.threads = a.threads;
  req.resources.device = a.device;
  req.resources.time_budget_s = 0;
  req.resources.eval_each_epoch = false;
  auto r = tr::train_platform(req, [&](int epoch, int, double loss, double) {
    std::printf("  base epoch %d loss %.4f (%.0f s)\n", epoch, loss, seconds_since(t0));
    std::fflush(stdout);
    return true;
  });
  if (!r) return r.status();
  const tr::RankingMetrics& m = r->metrics;
  std::printf(
      "base: %lld train programs / %lld tasks; on %s's standing eval split (%lld programs, %lld tasks): "
      "top-1 %.4f/%.4f top-5 %.4f/%.4f pairwise %.4f tuning %.4f (%.2f better) "
      "(floor %.4f/%.4f tuning %.4f (%.2f better)); train %.0f s, wall %.0f s\n",
      static_cast<long long>(r->data.train_records), static_cast<long long>(r->data.train_tasks),
      a.base_platforms[0].c_str(), static_cast<long long>(r->data.eval_records),
      static_cast<long long>(r->data.eval_tasks), m.top1.sum_ratio, m.top1.mean_ratio, m.top5.sum_ratio,
      m.top5.mean_ratio, m.pairwise_accuracy, m.tuning.geomean_ratio, m.tuning.share_better, m.random_top1.sum_ratio,
      m.random_top1.mean_ratio, m.random_tuning.geomean_ratio, m.random_tuning.share_better, r->train_s,
      seconds_since(t0));
  std::filesystem::create_directories(std::filesystem::path(a.base_checkpoint).parent_path());
  if (!tcl::core::write_file_atomic(a.base_checkpoint, r->checkpoint)) {
    return Status::internal("cannot write " + a.base_checkpoint);
  }
  return std::move(r->checkpoint);
}

// How repeatable a platform's measurements are: each measured record's
// repeats split in two halves (even and odd positions), each half's mean a
// latency of its own. Per task (records with >= 2 repeats; tasks with >= 2
// such records): the share of program pairs the halves order alike (ties in
// either half left out; a task with no untied pair is left out of the mean),
// and half B's top-1 ratio of the program half A finds fastest. Means over
// tasks; no model and no split, so it bounds what any model's pairwise
// accuracy and top-1 can show on that platform's data.
int run_repeatability(const Args& a) {
  for (const std::string& name : a.platforms) {
    std::vector<core::Record> records;
    if (!tcl::bench::load_records(records_path(a, name), &records)) return 1;
    std::unordered_map<std::string, std::vector<std::pair<double, double>>> halves;
    for (const core::Record& r : records) {
      if (core::classify(r) != core::RecordClass::kMeasured || r.costs.size() < 2) continue;
      double sum[2] = {0, 0};
      int count[2] = {0, 0};
      for (std::size_t i = 0; i < r.costs.size(); ++i) {
        sum[i % 2] += r.costs[i];
        ++count[i % 2];
      }
      halves[core::canonical_workload_key(r.workload_key)].emplace_back(sum[0] / count[0], sum[1] / count[1]);
    }
    double pairwise_sum = 0, top1_sum = 0, worst_top1 = 1;
    int tasks = 0, tasks_with_pairs = 0;
    std::int64_t used = 0;
    for (const auto& [key, v] : halves) {
      if (v.size() < 2) continue;
      used += static_cast<std::int64_t>(v.size());
      std::int64_t agree = 0, pairs = 0;
      for (std::size_t i = 0; i < v.size(); ++i) {
        for (std::size_t j = i + 1; j < v.size(); ++j) {
          const double da = v[i].first - v[j].first, db = v[i].second - v[j].second;
          if (da == 0 || db == 0) continue;
          ++pairs;
          agree += (da < 0) == (db < 0) ? 1 : 0;
        }
      }
      std::size_t fastest_a = 0;
      double best_b = v[0].second;
      for (std::size_t i = 1; i < v.size(); ++i) {
        if (v[i].first < v[fastest_a].first) fastest_a = i;
        best_b = std::min(best_b, v[i].second);
      }
      const double top1 = v[fastest_a].second > 0 ? best_b / v[fastest_a].second : 1.0;
      if (pairs > 0) {
        pairwise_sum += static_cast<double>(agree) / static_cast<double>(pairs);
        ++tasks_with_pairs;
      }
      top1_sum += top1;
      worst_top1 = std::min(worst_top1, top1);
      ++tasks;
    }
    if (tasks == 0) {
      std::printf("%s: no task with two records of repeated measurements\n", name.c_str());
      continue;
    }
    std::printf(
        "%s: %lld measured records with >= 2 repeats in %d tasks; the halves of the repeats agree on "
        "pairwise %.3f (%d tasks with an untied pair), top-1 mean ratio %.3f (worst task %.3f)\n",
        name.c_str(), static_cast<long long>(used), tasks, tasks_with_pairs > 0 ? pairwise_sum / tasks_with_pairs : 0.0,
        tasks_with_pairs, top1_sum / tasks, worst_top1);
  }
  return 0;
}

// Step 5: selection time on a large pool of x86-24c programs.
int run_timing(const Args& a, const std::string& base) {
  auto scorer = load_model(base, a.threads);
  if (!scorer) {
    std::fprintf(stderr, "base: %s\n", scorer.status().to_string().c_str());
    return 1;
  }
  const Clock::time_point t0 = Clock::now();
  std::vector<core::Record> records;
  if (!tcl::bench::load_records(records_path(a, kBasePlatform), &records)) return 1;
  auto own = platform_of_file(records_path(a, "x86-16c"));
  auto base_platform = tr::platform_of(records);
  if (!own || !base_platform) return 1;
  // Measured programs, one per program id, a seeded sample of timing_pool.
  std::vector<std::size_t> keep;
  {
    std::unordered_set<std::string> seen;
    for (std::size_t i = 0; i < records.size(); ++i) {
      if (core::classify(records[i]) == core::RecordClass::kMeasured &&
          seen.insert(core::program_id(records[i])).second) {
        keep.push_back(i);
      }
    }
  }
  std::uint64_t state = 0x0B0A4D1E5EEDULL;
  const auto next = [&state] {
    state += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  for (std::size_t i = keep.size(); i > 1; --i) std::swap(keep[i - 1], keep[next() % i]);
  if (static_cast<std::int64_t>(keep.size()) > a.timing_pool) keep.resize(static_cast<std::size_t>(a.timing_pool));
  std::sort(keep.begin(), keep.end());
  PlatformData p;
  p.name = "x86-24c sample";
  p.descriptor = descriptor_vector(*own);  // the pool as a new platform's candidates (x86-16c's descriptor)
  std::unordered_map<std::string, std::int32_t> task_index;
  for (std::size_t i : keep) {
    auto [it, added] = task_index.try_emplace(core::canonical_workload_key(records[i].workload_key),
                                              static_cast<std::int32_t>(p.split.task_keys.size()));
    if (added) p.split.task_keys.push_back(it->first);
    p.split.task.push_back(it->second);
    p.split.pool.push_back(std::move(records[i]));
  }
  records.clear();
  records.shrink_to_fit();
  std::printf("timing pool: %zu programs in %zu tasks, sampled from x86-24c (loaded in %.1f s)\n", p.split.pool.size(),
              p.split.task_keys.size(), seconds_since(t0));
  std::fflush(stdout);
  std::vector<std::int64_t> all(p.split.pool.size());
  std::iota(all.begin(), all.end(), 0);
  auto e = embed(a, *scorer, nullptr, p, {descriptor_vector(*base_platform)}, all, {}, a.seed_base);
  if (!e) {
    std::fprintf(stderr, "embed: %s\n", e.status().to_string().c_str());
    return 1;
  }
  const std::int64_t budget =
      tcl::onboarding::budget_of_fraction(a.timing_fraction, static_cast<std::int64_t>(all.size()));
  std::printf(
      "embed (PoolEmbedder: embeddings dim %lld + %d MC-dropout samples + 1 other conditioning, %d threads): "
      "%.2f s\n\n| strategy | budget | select s |\n|---|---|---|\n",
      static_cast<long long>(e->pool->dim()), a.mc_samples, a.threads, e->seconds);
  std::fflush(stdout);
  for (sampler::Strategy s : a.strategies) {
    double sec = 0;
    auto picks = select(a, *e, all, s, budget, a.seed_base, &sec);
    if (!picks) {
      std::fprintf(stderr, "select: %s\n", picks.status().to_string().c_str());
      return 1;
    }
    const std::string_view name = sampler::strategy_name(s);
    std::printf("| %.*s | %lld | %.2f |\n", static_cast<int>(name.size()), name.data(), static_cast<long long>(budget),
                sec);
    std::fflush(stdout);
  }
  return 0;
}

// --pick-percentiles: where a selection's picks sit in their tasks' latency
// order (0 = the task's fastest program, 1 = its slowest); random's mean is
// about 0.5 with a tenth in each decile.
void print_pick_percentiles(const PlatformData& p, std::span<const std::int64_t> picked, const std::string& label) {
  const tcl::onboarding::PlatformSplit& s = p.split;
  std::vector<std::vector<std::pair<double, std::size_t>>> by_task(s.task_keys.size());
  for (std::size_t i = 0; i < s.pool.size(); ++i) {
    by_task[static_cast<std::size_t>(s.task[i])].push_back({core::mean_cost(s.pool[i]), i});
  }
  std::vector<double> percentile(s.pool.size());
  for (auto& t : by_task) {
    std::sort(t.begin(), t.end());
    for (std::size_t r = 0; r < t.size(); ++r) {
      percentile[t[r].second] = t.size() > 1 ? static_cast<double>(r) / static_cast<double>(t.size() - 1) : 0;
    }
  }
  double sum = 0;
  std::size_t fastest = 0, slowest = 0;
  for (std::int64_t i : picked) {
    const double q = percentile[static_cast<std::size_t>(i)];
    sum += q;
    fastest += q <= 0.1;
    slowest += q >= 0.9;
  }
  const auto n = static_cast<double>(picked.size());
  std::printf("    %s picks: mean latency percentile in task %.3f; in the fastest decile %.3f, the slowest %.3f\n",
              label.c_str(), sum / n, static_cast<double>(fastest) / n, static_cast<double>(slowest) / n);
}

// Steps 2–4 for one platform.
// One platform's experiment: zero-shot, then per seed the 100% pool and
// every strategy and fraction (rounds of picks, then a fine-tune scored on
// the eval split), each outcome logged under its run key.
class PlatformRun {
 public:
  PlatformRun(const Args& args, const std::string& base_checkpoint, const Loaded& base_loaded,
              const std::vector<std::vector<float>>& base_descriptors, const Tags& run_tags, OutcomeLog& run_log,
              const std::string& platform)
      : a(args), base(base_checkpoint), base_model(base_loaded), base_desc(base_descriptors), tags(run_tags),
        log(run_log), name(platform), short_args(args), long_args(long_schedule_args(args)) {
    // --ft-auto-schedule: the decision FineTune::auto_schedule makes,
    // taken here so that the run is also logged under the explicit schedule's
    // key (and reuses a run made with those flags).
    short_args.ft_auto_schedule = false;
    const std::string base_sha = tcl::sha256_hex(base);
    short_tags = tags_of(short_args, base_sha);
    long_tags = tags_of(long_args, base_sha);
  }

  int run() {
    if (!load_platform(a, name, static_cast<int>(base_model.model->config().max_len), &p, &eval)) return 1;
    n = static_cast<std::int64_t>(p.split.pool.size());
    all.resize(static_cast<std::size_t>(n));
    std::iota(all.begin(), all.end(), 0);
    if (const int rc = zero_shot(); rc != 0) return rc;
    for (int si = 0; si < a.seeds; ++si) {
      if (const int rc = run_seed(a.seed_base + static_cast<std::uint64_t>(si)); rc != 0) return rc;
    }
    print_tables(a, tags, log, name, n);
    return 0;
  }

 private:
  // Zero-shot: the base with this platform's descriptor.
  int zero_shot() {
    const std::string zkey = run_key(name, 0, "zero-shot", 0.0, tags.zero_shot);  // seed-independent
    if (const Outcome* cached = log.find(zkey)) {
      print_outcome("zero-shot base", *cached, true);
      return 0;
    }
    auto m = evaluate(base_model, eval);
    if (!m) return fail(name, m.status());
    const Outcome o = outcome_of(*m, 0, 0, 0);
    log.add(zkey, o);
    print_outcome("zero-shot base", o, false);
    return 0;
  }

  // The zero-shot check of FineTune::auto_schedule on `chosen`, printed
  // under `what`: true when the platform is far from the base.
  Result<bool> far_from_base(std::span<const core::Record> chosen, std::uint64_t seed, const std::string& what) {
    auto fit = tr::zero_shot_fit(finetune_request(short_args, base, p, chosen, seed), base);
    if (!fit) return fit.status();
    const bool far = tr::long_schedule_needed(*fit);
    std::printf("    %s: the base on the %zu programs: pairwise %.4f; top-1 %.4f, chance %.4f (mean ratio): %s\n",
                what.c_str(), chosen.size(), fit->pairwise_accuracy, fit->top1.mean_ratio, fit->random_top1.mean_ratio,
                far ? "far" : "near");
    std::fflush(stdout);
    return far;
  }

  std::vector<core::Record> records_of(std::span<const std::int64_t> picks) const {
    std::vector<core::Record> chosen;
    chosen.reserve(picks.size());
    for (std::int64_t i : picks) chosen.push_back(p.split.pool[static_cast<std::size_t>(i)]);
    return chosen;
  }

  Result<Outcome> fine_tune_and_score(std::span<const std::int64_t> picks, std::uint64_t seed, double select_s,
                                      std::string_view strategy, double fraction) {
    const std::vector<core::Record> chosen = records_of(picks);
    const Args* run_args = &a;
    std::string explicit_key;
    if (a.ft_auto_schedule) {
      auto far_or = far_from_base(chosen, seed, "schedule of the fine-tune");
      if (!far_or) return far_or.status();
      const bool far = *far_or;
      run_args = far ? &long_args : &short_args;
      // With two rounds the column's schedule comes from the check on the
      // first round alone, which can differ from this one on all the picks,
      // so rdu's runs are not shared with an explicit schedule's.
      if (a.rounds == 1 || strategy == "all" || strategy == "random") {
        const Tags& t = far ? long_tags : short_tags;
        explicit_key = run_key(name, seed, strategy, fraction, strategy == "all" ? t.full : t.of(strategy));
        if (const Outcome* o = log.find(explicit_key)) return *o;
      }
    }
    auto r = finetune(*run_args, base, p, chosen, seed);
    if (!r) return r.status();
    if (r->best_epoch > 0) {
      std::printf("    kept epoch %d of %d%s (%lld steps; validation %lld programs, top-1 %.4f)\n", r->best_epoch,
                  static_cast<int>(r->epoch_validation.size()), r->refitted ? ", refitted on all" : "",
                  static_cast<long long>(r->steps), static_cast<long long>(r->validation.programs),
                  r->validation.top1.mean_ratio);
    }
    auto tuned = load_model(r->checkpoint, a.threads);
    if (!tuned) return tuned.status();
    auto m = evaluate(*tuned, eval);
    if (!m) return m.status();
    for (double alpha : a.wise) {  // WiSE-FT: the fine-tune mixed back with the base
      auto mixed = tr::interpolate_checkpoints(base, r->checkpoint, alpha);
      if (!mixed) return mixed.status();
      auto mixed_model = load_model(*mixed, a.threads);
      if (!mixed_model) return mixed_model.status();
      auto mm = evaluate(*mixed_model, eval);
      if (!mm) return mm.status();
      std::printf("    wise alpha=%.2f: top-1 %.4f/%.4f top-5 %.4f/%.4f pairwise %.4f tuning %.4f (%.2f better)\n",
                  alpha, mm->top1.sum_ratio, mm->top1.mean_ratio, mm->top5.sum_ratio, mm->top5.mean_ratio,
                  mm->pairwise_accuracy, mm->tuning.geomean_ratio, mm->tuning.share_better);
    }
    const Outcome o = outcome_of(*m, static_cast<std::int64_t>(picks.size()), r->wall_s, select_s);
    if (!explicit_key.empty()) log.add(explicit_key, o);
    return o;
  }

  int run_seed(std::uint64_t seed) {
    const Clock::time_point ts = Clock::now();
    if (a.full) {
      const std::string key = run_key(name, seed, "all", 1.0, tags.full);
      if (const Outcome* cached = log.find(key)) {
        print_outcome("seed " + std::to_string(seed) + " 100% pool", *cached, true);
      } else {
        auto o = fine_tune_and_score(all, seed, 0, "all", 1.0);
        if (!o) return fail("100%", o.status());
        log.add(key, *o);
        print_outcome("seed " + std::to_string(seed) + " 100% pool", *o, false);
      }
    }
    // Round-1 embeddings of the whole pool by the base (shared by every
    // strategy and fraction of this seed), made on first need.
    std::optional<Embedded> base_emb;
    for (double f : a.fractions) {
      for (sampler::Strategy strategy : a.strategies) {
        if (const int rc = run_selection(seed, f, strategy, &base_emb); rc != 0) return rc;
      }
    }
    std::printf("  seed %llu done in %.0f s\n", static_cast<unsigned long long>(seed), seconds_since(ts));
    return 0;
  }

  // One strategy at one fraction: its rounds of picks, then the fine-tune.
  int run_selection(std::uint64_t seed, double f, sampler::Strategy strategy, std::optional<Embedded>* base_emb) {
    const std::int64_t budget = tcl::onboarding::budget_of_fraction(f, static_cast<std::int64_t>(n));
    const std::string_view sname = sampler::strategy_name(strategy);
    const std::string key = run_key(name, seed, sname, f, tags.of(strategy));
    const std::string label =
        "seed " + std::to_string(seed) + " " + std::string(sname) + " @" + fmt("%g", 100 * f) + "%";
    if (const Outcome* o = log.find(key)) {
      print_outcome(label, *o, true);
      return 0;
    }
    if (!*base_emb) {
      auto e = embed(a, base_model, nullptr, p, base_desc, all, {}, seed);
      if (!e) return fail("embed", e.status());
      *base_emb = std::move(*e);
      std::printf("  seed %llu: pool embedded in %.2f s\n", static_cast<unsigned long long>(seed),
                  (*base_emb)->seconds);
    }
    double select_s = 0;
    std::vector<std::int64_t> picked;
    const int rounds = sampler::uses_model(strategy) ? a.rounds : 1;
    for (int round = 1; round <= rounds; ++round) {
      const std::int64_t target = budget * round / rounds;  // cumulative picks after this round
      const std::int64_t b = target - static_cast<std::int64_t>(picked.size());
      if (b < 1) continue;
      Result<std::vector<std::int64_t>> picks = round == 1
                                                    ? select(a, **base_emb, all, strategy, b, seed, &select_s)
                                                    : later_round(seed, round, strategy, b, label, picked, &select_s);
      if (!picks) {
        std::fprintf(stderr, "%s round %d: %s\n", label.c_str(), round, picks.status().to_string().c_str());
        return 1;
      }
      picked.insert(picked.end(), picks->begin(), picks->end());
    }
    if (a.pick_percentiles) print_pick_percentiles(p, picked, label);
    auto o = fine_tune_and_score(picked, seed, select_s, sname, f);
    if (!o) return fail(label, o.status());
    log.add(key, *o);
    print_outcome(label, *o, false);
    return 0;
  }

  // Round 2 and later: the active column (the base fine-tuned on what is
  // measured so far) scores the rest of the pool; the base is its reference.
  // With --column-auto only where the base orders the measured programs no
  // better than a coin; elsewhere the base goes on scoring, the measured
  // counted as taken (an experiment: on x86-16c it did not pick better than
  // the column, session 7).
  Result<std::vector<std::int64_t>> later_round(std::uint64_t seed, int round, sampler::Strategy strategy,
                                                std::int64_t b, const std::string& label,
                                                const std::vector<std::int64_t>& picked, double* select_s) {
    const std::vector<core::Record> chosen = records_of(picked);
    bool use_column = true;
    const Args* column_args = &a;
    if (a.column_auto || a.ft_auto_schedule) {
      auto far = far_from_base(chosen, seed, label + " round " + std::to_string(round) + ", measured so far");
      if (!far) return far.status().with_context("zero-shot check");
      if (a.column_auto) use_column = *far;
      if (a.ft_auto_schedule) column_args = *far ? &long_args : &short_args;
    }
    std::optional<Loaded> active;
    if (use_column) {
      auto r = finetune(*column_args, base, p, chosen, seed);
      if (!r) return r.status().with_context("active column");
      auto loaded = load_model(r->checkpoint, a.threads);
      if (!loaded) return loaded.status().with_context(name);
      active = std::move(*loaded);
    }
    std::unordered_set<std::int64_t> taken(picked.begin(), picked.end());
    std::vector<std::int64_t> rest;
    for (std::int64_t i : all) {
      if (!taken.count(i)) rest.push_back(i);
    }
    auto e = embed(a, base_model, active ? &*active : nullptr, p, base_desc, rest, picked,
                   seed + 1000 * static_cast<std::uint64_t>(round));
    if (!e) return e.status().with_context("embed");
    return select(a, *e, rest, strategy, b, seed + static_cast<std::uint64_t>(round), select_s);
  }

  const Args& a;
  const std::string& base;
  const Loaded& base_model;
  const std::vector<std::vector<float>>& base_desc;  // every base platform's
  const Tags& tags;
  OutcomeLog& log;
  const std::string& name;
  Args short_args;
  const Args long_args;
  Tags short_tags, long_tags;
  PlatformData p;
  tr::Dataset eval;  // p's held-out records, tokenised
  std::int64_t n = 0;
  std::vector<std::int64_t> all;
};

int run_platform(const Args& a, const std::string& base, const Loaded& base_model,
                 const std::vector<std::vector<float>>& base_desc, const Tags& tags, OutcomeLog& log,
                 const std::string& name) {
  return PlatformRun(a, base, base_model, base_desc, tags, log, name).run();
}

}  // namespace

// --report SALTS: no training. For each platform, the logged runs of the
// flags' settings on these task splits (seeds --seed-base..): per split the
// mean over seeds, then the mean over splits. The 95% intervals come from a
// bootstrap that resamples the seeds of every cell with replacement and keeps
// the splits fixed (they are the protocol's, not a sample), so they show how
// far seed-to-seed noise alone could move each figure.
// A row of the --report tables: one strategy at one fraction (or 100%),
// its outcomes per split (salt) and per seed found.
struct ReportRow {
  std::string label;  // "rdu @10%", "100%"
  bool random = false;
  double fraction = 1;
  std::vector<std::vector<double>> sum, mean;  // per split: per seed found
  std::vector<std::vector<double>> pairwise;   // per split: per seed found
  std::vector<std::vector<double>> tuning;     // per split: per seed found with the tuning columns
};
using Row = ReportRow;

bool complete(const Row& row) {
  return std::all_of(row.mean.begin(), row.mean.end(), [](const auto& xs) { return !xs.empty(); });
}

double mean_of_splits(const std::vector<std::vector<double>>& cells) {
  double total = 0;
  for (const auto& xs : cells) total += mean_of(xs);
  return total / static_cast<double>(cells.size());
}

// Every row's outcomes on every report split, from the run log; the
// zero-shot cell of each split in `zero_shot`.
std::vector<Row> gather_rows(const Args& a, const OutcomeLog& log, const std::vector<std::uint64_t>& seeds,
                             const std::string& platform, const std::string& base_sha,
                             std::vector<std::string>* zero_shot_cells) {
  std::vector<std::string>& zero_shot = *zero_shot_cells;
  std::vector<Row> rows;
  for (double f : a.fractions) {
    for (sampler::Strategy st : a.strategies) {
      rows.push_back({std::string(sampler::strategy_name(st)) + " @" + fmt("%g", 100 * f) + "%",
                      st == sampler::Strategy::kRandom,
                      f,
                      {},
                      {},
                      {},
                      {}});
    }
  }
  rows.push_back({"100%", false, 1.0, {}, {}, {}, {}});
  for (std::uint64_t salt : a.report_salts) {
    Args at = a;
    at.split_salt = salt;
    const Tags tags = tags_of(at, base_sha);
    const Outcome* z = log.find(run_key(platform, 0, "zero-shot", 0.0, tags.zero_shot));
    zero_shot.push_back(!z ? "–"
                           : fmt("%.3f", z->top1_sum) + " / " + fmt("%.3f", z->top1_mean) +
                                 (std::isnan(z->tuning) ? "" : ", tuning " + fmt("%.3f", z->tuning)));
    std::size_t r = 0;
    const auto gather = [&](Row& row, std::string_view strategy, double f, const std::string& tag) {
      row.sum.emplace_back();
      row.mean.emplace_back();
      row.pairwise.emplace_back();
      row.tuning.emplace_back();
      for (std::uint64_t seed : seeds) {
        if (const Outcome* o = log.find(run_key(platform, seed, strategy, f, tag))) {
          row.sum.back().push_back(o->top1_sum);
          row.mean.back().push_back(o->top1_mean);
          row.pairwise.back().push_back(o->pairwise);
          if (!std::isnan(o->tuning)) row.tuning.back().push_back(o->tuning);
        }
      }
    };
    for (double f : a.fractions) {
      for (sampler::Strategy st : a.strategies) gather(rows[r++], sampler::strategy_name(st), f, tags.of(st));
    }
    gather(rows[r], "all", 1.0, tags.full);
  }
  return rows;
}

// The table of every split and their mean.
void print_split_table(const Args& a, const std::vector<Row>& rows, const std::vector<std::string>& zero_shot,
                       const std::vector<std::uint64_t>& seeds, const std::string& platform,
                       const std::string& base_sha) {
  std::string settings = tags_of(a, base_sha).selection;  // its salt is --split-salt's, not the report's
  if (const std::size_t at = settings.find(" salt="); at != std::string::npos) {
    settings.erase(at, settings.find(' ', at + 1) - at);
  }
  std::printf("\n### %s — splits", platform.c_str());
  for (std::uint64_t salt : a.report_salts) std::printf(" %llu", static_cast<unsigned long long>(salt));
  std::printf(
      ", seeds %llu..%llu; %s\n\ntop-1 sum / mean ratio, tuning proxy (geometric mean, < 1 is better than "
      "random), mean over the seeds found (how many)\n\n| split | zero-shot |",
      static_cast<unsigned long long>(seeds.front()), static_cast<unsigned long long>(seeds.back()), settings.c_str());
  for (const Row& row : rows) std::printf(" %s |", row.label.c_str());
  std::printf("\n|---|---|");
  for (std::size_t i = 0; i < rows.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (std::size_t s = 0; s < a.report_salts.size(); ++s) {
    std::printf("| salt %llu | %s |", static_cast<unsigned long long>(a.report_salts[s]), zero_shot[s].c_str());
    for (const Row& row : rows) {
      if (row.mean[s].empty())
        std::printf(" – |");
      else {
        const std::string tuning = row.tuning[s].empty() ? "" : ", tuning " + fmt("%.3f", mean_of(row.tuning[s]));
        std::printf(" %.3f / %.3f%s (%zu) |", mean_of(row.sum[s]), mean_of(row.mean[s]), tuning.c_str(),
                    row.mean[s].size());
      }
    }
    std::printf("\n");
  }
  std::printf("| mean | |");
  for (const Row& row : rows) {
    if (!complete(row))
      std::printf(" – |");
    else {
      const bool tuned = std::all_of(row.tuning.begin(), row.tuning.end(), [](const auto& xs) { return !xs.empty(); });
      const std::string tuning = tuned ? ", tuning " + fmt("%.3f", mean_of_splits(row.tuning)) : "";
      std::printf(" %.3f / %.3f%s |", mean_of_splits(row.sum), mean_of_splits(row.mean), tuning.c_str());
    }
  }
  std::printf("\n");
}

// Each row against 100% (and against random at its fraction), with 95%
// bootstrap intervals over the seeds: top-1 sum and mean as ratios, and the
// pairwise accuracy. Without the 100% runs (--no-full) only − random.
void print_intervals(const std::vector<Row>& rows) {
  // The bootstrap resamples each row's seeds independently of the other
  // rows' (the 100% row has its own seeds). A percentile interval over 2–3
  // seeds per cell understates the spread, hence the smallest n printed.
  const Row& full = rows.back();
  const bool with_full = complete(full);
  const auto random_at = [&](double f) -> const Row* {
    for (const Row& row : rows) {
      if (row.random && row.fraction == f) return &row;
    }
    return nullptr;
  };
  std::size_t fewest = SIZE_MAX;
  for (const Row& row : rows) {
    for (const auto& xs : row.mean) {
      if (!xs.empty()) fewest = std::min(fewest, xs.size());
    }
  }
  std::mt19937_64 rng(1);
  const auto resampled = [&](const std::vector<std::vector<double>>& cells) {
    double total = 0;
    for (const auto& xs : cells) {
      std::uniform_int_distribution<std::size_t> pick(0, xs.size() - 1);
      double m = 0;
      for (std::size_t i = 0; i < xs.size(); ++i) m += xs[pick(rng)];
      total += m / static_cast<double>(xs.size());
    }
    return total / static_cast<double>(cells.size());
  };
  const auto interval = [](std::vector<double> xs) {
    std::sort(xs.begin(), xs.end());
    const auto at = [&](double q) { return xs[static_cast<std::size_t>(q * static_cast<double>(xs.size() - 1))]; };
    return std::pair{at(0.025), at(0.975)};
  };
  constexpr int kDraws = 10000;
  std::printf("\nmean of the splits, 95%% bootstrap interval over seeds (%d draws; fewest seeds in a cell: %zu)%s\n\n",
              kDraws, fewest, with_full ? "" : "; no 100% runs on some split: − random only");
  struct Figure {
    const char* title;
    std::vector<std::vector<double>> Row::*cells;
    bool ratio;  // printed as a share of 100%'s
  };
  for (const Row& row : rows) {
    if (&row == &full || !complete(row)) continue;
    for (const Figure& fig : {Figure{"top-1 sum ratio", &Row::sum, true}, Figure{"top-1 mean ratio", &Row::mean, true},
                              Figure{"pairwise accuracy", &Row::pairwise, false}}) {
      const Row* random = random_at(row.fraction);
      const bool versus_random = random && random != &row && complete(*random);
      const bool versus_full = with_full && fig.ratio;
      if (!versus_random && !versus_full) continue;
      std::vector<double> ratios, gaps;
      for (int d = 0; d < kDraws; ++d) {
        const double x = resampled(row.*fig.cells);
        if (versus_full) ratios.push_back(x / resampled(full.*fig.cells));
        if (versus_random) gaps.push_back(x - resampled(random->*fig.cells));
      }
      const double x = mean_of_splits(row.*fig.cells);
      std::printf("%-14s %s", row.label.c_str(), fig.title);
      if (versus_full) {
        const auto [lo, hi] = interval(ratios);
        std::printf(": / 100%% = %.3f [%.3f, %.3f]", x / mean_of_splits(full.*fig.cells), lo, hi);
      } else {
        std::printf(" %.3f", x);
      }
      if (versus_random) {
        const auto [glo, ghi] = interval(gaps);
        std::printf("%s − random = %+.3f [%+.3f, %+.3f]", versus_full ? ";" : ":",
                    x - mean_of_splits(random->*fig.cells), glo, ghi);
      }
      std::printf("\n");
    }
  }
}

int run_report(const Args& a, const std::string& base_sha) {
  const OutcomeLog log(a.out + "/runs.tsv");
  const std::vector<std::uint64_t> seeds = seeds_of(a);
  for (const std::string& platform : a.platforms) {
    std::vector<std::string> zero_shot;
    const std::vector<Row> rows = gather_rows(a, log, seeds, platform, base_sha, &zero_shot);
    print_split_table(a, rows, zero_shot, seeds, platform, base_sha);
    print_intervals(rows);
  }
  return 0;
}

int main(int argc, char** argv) {
  Args a;
  if (!parse_args(argc, argv, &a)) return 2;
  const Clock::time_point t0 = Clock::now();
  std::filesystem::create_directories(a.out);
  std::printf("# bench_onboarding:");
  for (int i = 1; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\n");
  std::fflush(stdout);

  if (a.repeatability) return run_repeatability(a);
  if (report_from_log(a)) return run_report(a, a.base_sha);
  if (!a.report_salts.empty() && !std::filesystem::exists(a.base_checkpoint)) {
    std::fprintf(stderr, "--report reads the runs of an existing base: %s does not exist\n", a.base_checkpoint.c_str());
    return 2;
  }
  auto base = base_checkpoint(a);
  if (!base) {
    std::fprintf(stderr, "base: %s\n", base.status().to_string().c_str());
    return 1;
  }
  if (!a.report_salts.empty()) return run_report(a, tcl::sha256_hex(*base));
  if (a.timing) {
    const int rc = run_timing(a, *base);
    std::printf("\ntotal wall time %.0f s\n", seconds_since(t0));
    return rc;
  }
  auto base_model = load_model(*base, a.threads);
  if (!base_model) {
    std::fprintf(stderr, "base model: %s\n", base_model.status().to_string().c_str());
    return 1;
  }
  std::vector<std::vector<float>> base_desc;
  for (const std::string& name : a.base_platforms) {
    auto platform = platform_of_file(records_path(a, name));
    if (!platform) {
      std::fprintf(stderr, "base platform %s: %s\n", name.c_str(), platform.status().to_string().c_str());
      return 1;
    }
    base_desc.push_back(descriptor_vector(*platform));
  }
  const Tags tags = tags_of(a, tcl::sha256_hex(*base));
  OutcomeLog log(a.out + "/runs.tsv");
  std::printf("settings: %s; seeds %llu..%llu; threads %d\n", tags.selection.c_str(),
              static_cast<unsigned long long>(a.seed_base),
              static_cast<unsigned long long>(a.seed_base + static_cast<std::uint64_t>(a.seeds) - 1), a.threads);
  for (const std::string& name : a.platforms) {
    if (int rc = run_platform(a, *base, *base_model, base_desc, tags, log, name); rc != 0) return rc;
  }
  std::printf("\ntotal wall time %.0f s\n", seconds_since(t0));
  return 0;
}
