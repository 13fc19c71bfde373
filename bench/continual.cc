// bench_continual — continual distillation (DESIGN §5) along a platform
// sequence on real records (issue 6 item 8): how much each old platform
// forgets, how well the new one is learned, the parameter count and the
// seconds of a distillation step, for distillation versus the baselines.
//
//   0. Splits (the evaluation protocol's, onboarding/platform_data.h): per
//      platform, tasks with core::in_holdout(canonical key, 0.3, salt S) form
//      the evaluation split (all their measured records; never used for a
//      gradient); the measured records of the other tasks, one per program
//      (core::program_id), are the platform's pool.
//      --validation F (for choosing settings, DESIGN §10): the held-out split
//      is read but never scored or trained on, and F of the pool's tasks
//      (core::in_holdout(key, F, salt S + 1)) become the split every model is
//      scored on; only the rest is the pool. The cache then lives in
//      --cache/validation-F.
//      --split-salt S (default 0) picks another 30% of the tasks to hold out,
//      for how much a result owes to which tasks were held out (the seeds
//      vary training, not the tasks); cache in --cache/split-salt-S.
//   1. Base (step 0): the default student trained on the first platform's
//      pool (train_platform: eval_fraction 0, max_records --base-max-records,
//      --base-epochs, --threads, seed --base-seed (default --seed), no time
//      budget, with Fisher).
//   2. Each next platform k: 10% (--fraction) of k's pool picked by rdu as the
//      daemon's sample request does (trainer::PoolEmbedder with the current
//      production model = the distill lineage's student, fast path, k's
//      descriptor, others = descriptors of the platforms covered so far,
//      --mc-samples, seed --seed; sampler::select budget
//      onboarding::budget_of_fraction(fraction, pool),
//      default weights and min_per_task, seed --seed). Every method trains on
//      that same set (an extra distill lineage selects with its own student).
//      Methods, each from its own previous model:
//        distill  active column = train_platform(init = teacher, selected,
//                 --column-epochs, no Fisher); student = train_platform(init =
//                 teacher, selected, distill = the distill job's plan,
//                 onboarding::plan_distillation, of {column, old descriptors of
//                 every covered platform, teacher's Fisher, --ewc,
//                 --old-weight, --column-weight (the main lineage's per
//                 covered platform, onboarding::column_term_weight as a
//                 distill job's, or as given with --column-weight-constant;
//                 the extra lineage's as given), the unselected rest of
//                 the pool as unlabeled KD inputs at --unlabeled-ratio,
//                 with --old-bank N the covered platforms' banks (N
//                 programs each from their pools, held-out tasks never,
//                 measurements cleared) as inputs of the old-platform KD
//                 term; with --old-weight-other-kind F the main lineage's
//                 old KD on k's programs at F x --old-weight for an old
//                 platform of another target kind (--old-weight-same-kind
//                 F: of k's kind), as bench::old_weight_on_new_programs; with
//                 --student-from-column the main lineage's student starts
//                 from the column, EWC still anchored at the teacher; with
//                 --teacher-mix M its student is mixed back with the teacher
//                 in weight space, DistillLevers::teacher_mix}, --epochs);
//                 its Fisher is the next teacher's.
//        ft       plain fine-tuning: train_platform(init = previous, selected,
//                 --epochs), no distillation.
//        b        joint training (the multi-task upper bound at the same
//                 measurement budget): a fresh student on the first
//                 platform's pool as the base saw it plus the selection of
//                 every later platform (trainer::JointTraining, --base-epochs).
//        adapter  (d) the distill job's adapter method: per platform an
//                 adapter (trainer::kDistillAdapter, kDistillAdapterEpochs,
//                 kDistillAdapterLearningRate) fine-tuned on the selection
//                 with the base's trunk frozen, kept beside the earlier
//                 platforms' (attach_adapter); each platform is scored with
//                 its own adapter folded in (platform_checkpoint), so an old
//                 platform's score never moves.
//        best-of  (e) the distill job's best-of method (onboarding/best_of.h),
//                 with --best-of-choice; best-of-trunk (f) the same with
//                 every old platform's KD from the parent's trunk, as the
//                 student's, not from the model that serves it: its trunk
//                 is the student lineage's.
//        c1, c2   a separate fresh student per platform on the selected set
//                 (c1) or the whole pool (c2, capped at --base-max-records);
//                 the first platform's is the base.
//      --extra-distill OLD,EWC[,UNLABELED[,COLUMN]] adds a second, labelled
//      distill lineage with those weights (the one allowed variation); its
//      student trains at 2e-3 whatever --student-lr says (as before the flag).
//      Each distill lineage's column is scored on its platform too ("column
//      of LINEAGE" lines, in no table), the reference its student is
//      compared with.
//      --platform-slots (issue 19's adapter lever, without (b)): each
//      platform's descriptor gets its one-hot of its place in --platforms
//      appended, so the model (descriptor_dim 36 + platforms) holds FiLM
//      weights per platform that other platforms' inputs never reach.
//      --ensembles (with adapter and best-of): the new platform's score
//      under the mean of standardized scores of (d)'s adapter, (e)'s
//      fine-tune and (e)'s adapter on its trunk ("ensemble of ..." lines;
//      score_ensembles), a lever measured before it is built.
//      --best-of-candidates: every best-of step also
//      scores the student, the adapter on the parent's trunk and the adapter
//      on the student, each trained on the whole selection ("candidate ...
//      of LINEAGE" lines; scored whatever the choice, so one run measures
//      every choice whose trunk is the same).
//      --zero-shot-candidates: forward transfer also scores, for the
//      lineages with a model per platform, the nearest learned platform's
//      model and the mean of the learned same-kind platforms' models
//      (score_zero_shot_candidates), a lever measured before it is built.
//   3. After each step every current model is scored on the evaluation split
//      of every platform seen so far: trainer::evaluate_checkpoint(records of
//      that platform, DatasetOptions{eval_fraction 0.3, split_salt S — with
//      --validation F: F, salt S + 1, the pool's tasks only, so a
//      report at salt S + 1 holds out all of them — max_eval_records 20000}); top-1 mean ratio
//      (sum ratio beside it) and the tuning proxy (geometric mean ratio) and pairwise accuracy, forgetting = top-1 now
//      − top-1 right after the platform was learned.
//
// Everything trained (checkpoints, Fisher, selections, metrics, seconds) is
// stored under --cache, named by a hash of what produced it (inputs' sha256,
// settings), each file written whole or not at all (core/files.h), so a
// rerun resumes and a variation reuses what it shares.
// Tables go to stdout and to --out/RESULTS.md, rewritten after each step.
//
//   bench_continual [--data /work/shared/data] [--out /tmp/continual]
//       [--cache /tmp/continual/cache] [--platforms x86-24c,x86-16c,gpu-2080ti]
//       [--epochs 12] [--column-epochs 12] [--ewc 0.2] [--old-weight 2]
//       [--unlabeled-ratio 1] [--column-weight 1] [--column-weight-constant] [--old-bank 0]
//       [--old-weight-other-kind 1] [--old-weight-same-kind 1] [--student-from-column] [--old-bank-ratio 1]
//       [--feature-weight 0]
//       [--student-lr 0.002] [--teacher-mix 0]
//       [--extra-distill OLD,EWC[,UNLABELED[,COLUMN]]] [--seed 1]
//       [--base-seed SEED] [--fraction 0.1] [--validation 0] [--split-salt 0] [--platform-slots]
//       [--mc-samples 8] [--base-epochs 4] [--base-max-records 40000] [--threads 2]
//       [--device auto|cpu|cuda]
//       [--methods distill,ft,b,c1,c2,adapter,best-of,best-of-trunk] [--best-of-choice adapter-on-student]
//       [--ensembles]
//       [--best-of-candidates] [--zero-shot-candidates]
//
// --data holds one folder per platform with records.jsonl.gz. Run under
// `nice -n 10` on a shared box; one training at a time (threads = --threads).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/features.h"
#include "core/files.h"
#include "core/platform.h"
#include "core/record.h"
#include "core/program_id.h"
#include "core/sha256.h"
#include "core/task_split.h"
#include "sampler/rdu.h"
#include "trainer/cost_model.h"
#include "trainer/dataset.h"
#include "bench/lib/device_arg.h"
#include "bench/lib/timing.h"
#include "bench/lib/distill_levers.h"
#include "bench/lib/flags.h"
#include "bench/lib/records.h"
#include "trainer/device.h"
#include "trainer/evaluation.h"
#include "trainer/fast_inference.h"
#include "bench/lib/platform_data.h"
#include "onboarding/best_of.h"
#include "onboarding/distill.h"
#include "onboarding/job_options.h"
#include "onboarding/platform_data.h"
#include "onboarding/round.h"
#include "trainer/pool_embedding.h"
#include "trainer/train_job.h"

namespace {

namespace core = tcl::core;
namespace ob = tcl::onboarding;
namespace tr = tcl::trainer;
namespace sampler = tcl::sampler;
using tcl::Result;
using tcl::Status;
using Clock = std::chrono::steady_clock;
using tcl::bench::cpu_seconds;
using tcl::bench::seconds_since;

constexpr double kHoldout = 0.3;
// The column weight that lineage names, cache keys and scripts/gpu/
// continual_steps.py leave unnamed: every run before --column-weight used it.
constexpr double kUnnamedColumnWeight = 1.0;
constexpr std::int64_t kMaxEvalRecords = 20'000;

// The split every model is scored on: core::in_holdout(key, fraction, salt).
struct ScoredSplit {
  double fraction;
  std::uint64_t salt;
};

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

using tcl::bench::split_list;
using tcl::core::read_file;
using tcl::core::write_file_atomic;

// The distill job's bank ratio: a lineage at it is named as before the flag
// existed (its name, cache key and header).
const double kJobBankRatio = tr::DistillTargets{}.old_bank_ratio;
const double kJobFeatureWeight = tr::DistillLevers{}.feature_weight;  // the same, for --feature-weight
const double kJobTeacherMix = tr::DistillLevers{}.teacher_mix;        // the same, for --teacher-mix
// The student's learning rate of every cached student and log before --student-lr: a student at
// it (the job's default) is named as before (cache key, lineage), one at any other rate by its rate.
const double kUnnamedStudentLr = 2e-3;

struct Args {
  std::string data = "/work/shared/data";
  std::string out = "/tmp/continual";
  std::string cache;  // default <out>/cache
  std::vector<std::string> platforms = {"x86-24c", "x86-16c", "gpu-2080ti"};
  std::set<std::string> methods = {"distill", "ft", "b", "c1", "c2"};
  int epochs = tr::kDistillStudentEpochs, column_epochs = tr::kDistillColumnEpochs, base_epochs = 4;
  double ewc = tr::DistillTargets{}.ewc_weight;
  double old_weight = tr::DistillTargets{}.old_weight;
  double unlabeled_ratio = tr::DistillTargets{}.unlabeled_ratio;
  double column_weight = tr::DistillTargets{}.column_weight;
  // The main lineage's column weight is --column-weight per old platform, as
  // a distill job's (onboarding::column_term_weight); --column-weight-constant:
  // the same weight at every step (the default of sessions 15-18).
  bool column_weight_constant = false;
  // --old-weight-other-kind F: the main lineage's old KD on the new
  // platform's programs weighs F times old_weight for an old platform of
  // another target kind (bench::old_weight_on_new_programs); 1 = as the job.
  double old_weight_other_kind = 1;
  // --old-weight-same-kind F: the same for an old platform of the new one's
  // target kind (issue 19's lever of session 27: 0 = its KD on the bank
  // only, none without --old-bank).
  double old_weight_same_kind = 1;
  // --student-from-column: the main lineage's students start from their
  // active column, not the teacher (DistillLevers::student_from_column).
  bool student_from_column = false;
  // --old-bank-ratio R: the main lineage's bank batches per measured batch
  // (DistillTargets::old_bank_ratio; issue 19's lever of session 24).
  double old_bank_ratio = kJobBankRatio;
  // --feature-weight W: the main lineage's feature KD on the bank
  // (DistillLevers::feature_weight; issue 19's lever of session 25).
  double feature_weight = kJobFeatureWeight;
  // --student-lr LR: the main lineage's student's AdamW peak learning rate
  // (issue 19's lever of session 26; default the job's). Every column trains
  // at make_request's, TrainRequest's 2e-3 (as the job's, column_request);
  // the extra lineage's student at 2e-3, as before the flag.
  double student_lr = tr::kDistillStudentLearningRate;
  // --teacher-mix M: the main lineage's students mixed back with their
  // teacher in weight space (DistillLevers::teacher_mix; issue 19's lever
  // of session 27).
  double teacher_mix = kJobTeacherMix;
  std::int64_t old_bank = 0;  // --old-bank N: programs per old platform as the distills' bank (0 = none)
  bool extra = false;
  double extra_old = 0, extra_ewc = 0, extra_unlabeled = 0, extra_column = 0;
  std::uint64_t seed = 1;
  std::uint64_t base_seed = 0;  // 0 = --seed
  double fraction = 0.1;
  double validation = 0;         // --validation F: score F of the pool's tasks instead of the held-out split
  std::uint64_t split_salt = 0;  // --split-salt S: which 30% of each platform's tasks are held out
  bool platform_slots = false;   // --platform-slots: each platform's one-hot appended to its descriptor
  int mc_samples = 8;
  std::int64_t base_max_records = 40'000;
  double choice_fraction = ob::kChoiceFraction;  // --choice-fraction: best-of's validation share of the selection
  ob::Choice choice = ob::kDefaultChoice;  // --best-of-choice fine-tune|validation|soup|adapter|adapter-on-student
  bool best_of_candidates = false;         // --best-of-candidates: score every candidate on the eval split
  bool no_zero_shot = false;               // --no-zero-shot: skip the forward-transfer scores
  bool ensembles = false;                  // --ensembles: score_ensembles' lines (needs (d) and (e))
  bool zero_shot_candidates = false;       // --zero-shot-candidates: score_zero_shot_candidates' lines
  int threads = 2;
  tr::Device device = tr::Device::kAuto;  // --device: where every model trains
  std::string command;                    // the command line, for the tables
};

// --extra-distill OLD,EWC[,UNLABELED_RATIO[,COLUMN_WEIGHT]] into a->extra*
// (-1 for a weight not given: finish_args fills in the main lineage's).
bool read_extra_distill(const std::string& v, Args* a) {
  const auto w = split_list(v);
  if (w.size() < 2 || w.size() > 4) {
    std::fprintf(stderr, "--extra-distill needs OLD,EWC[,UNLABELED_RATIO[,COLUMN_WEIGHT]]\n");
    return false;
  }
  a->extra = true;
  a->extra_old = std::atof(w[0].c_str());
  a->extra_ewc = std::atof(w[1].c_str());
  a->extra_unlabeled = w.size() >= 3 ? std::atof(w[2].c_str()) : -1;  // -1: --unlabeled-ratio's
  a->extra_column = w.size() == 4 ? std::atof(w[3].c_str()) : -1;     // -1: --column-weight's
  if (a->extra_old < 0 || a->extra_ewc < 0 || (w.size() >= 3 && a->extra_unlabeled < 0) ||
      (w.size() == 4 && a->extra_column < 0)) {
    std::fprintf(stderr, "--extra-distill: weights are >= 0\n");
    return false;
  }
  return true;
}

void declare_flags(tcl::bench::Flags& flags, Args* a) {
  flags.value("data", &a->data)
      .value("out", &a->out)
      .value("cache", &a->cache)
      .list("platforms", &a->platforms)
      .custom("methods",
              [a](const std::string& v) {
                const auto m = split_list(v);
                a->methods = std::set<std::string>(m.begin(), m.end());
                return true;
              })
      .value("epochs", &a->epochs)
      .value("column-epochs", &a->column_epochs)
      .value("base-epochs", &a->base_epochs)
      .value("ewc", &a->ewc)
      .value("old-weight", &a->old_weight)
      .value("unlabeled-ratio", &a->unlabeled_ratio)
      .value("column-weight", &a->column_weight)
      .flag("column-weight-constant", &a->column_weight_constant)
      .value("old-weight-other-kind", &a->old_weight_other_kind)
      .value("old-weight-same-kind", &a->old_weight_same_kind)
      .flag("student-from-column", &a->student_from_column)
      .value("old-bank-ratio", &a->old_bank_ratio)
      .value("feature-weight", &a->feature_weight)
      .value("student-lr", &a->student_lr)
      .value("teacher-mix", &a->teacher_mix)
      .value("old-bank", &a->old_bank)
      .custom("extra-distill", [a](const std::string& v) { return read_extra_distill(v, a); })
      .value("seed", &a->seed)
      .value("base-seed", &a->base_seed)
      .value("fraction", &a->fraction)
      .value("validation", &a->validation)
      .value("split-salt", &a->split_salt)
      .flag("platform-slots", &a->platform_slots)
      .value("mc-samples", &a->mc_samples)
      .value("base-max-records", &a->base_max_records)
      .value("choice-fraction", &a->choice_fraction)
      .custom("best-of-choice",
              [a](const std::string& v) {
                const auto c = ob::choice_named(v);
                if (!c) {
                  std::fprintf(stderr,
                               "--best-of-choice must be fine-tune, validation, soup, adapter or adapter-on-student\n");
                  return false;
                }
                a->choice = *c;
                return true;
              })
      .flag("best-of-candidates", &a->best_of_candidates)
      .flag("no-zero-shot", &a->no_zero_shot)
      .flag("ensembles", &a->ensembles)
      .flag("zero-shot-candidates", &a->zero_shot_candidates)
      .value("threads", &a->threads)
      .custom("device", tcl::bench::device_arg(&a->device));
}

// What the flags leave to derive: the cache folder, the base seed and the
// extra lineage's weights not given.
void finish_args(Args* a) {
  if (a->cache.empty()) a->cache = a->out + "/cache";
  // Every pool, and so everything trained, differs with another split salt
  // or in validation mode: each has a cache folder of its own, which is what
  // keeps their files apart (most keys below do not name them).
  if (a->split_salt != 0) a->cache += "/split-salt-" + std::to_string(a->split_salt);
  if (a->validation > 0) a->cache += "/validation-" + fmt("%g", a->validation);
  if (a->platform_slots) a->cache += "/platform-slots";
  if (a->base_seed == 0) a->base_seed = a->seed;
  if (a->extra && a->extra_unlabeled < 0) a->extra_unlabeled = a->unlabeled_ratio;
  if (a->extra && a->extra_column < 0) a->extra_column = a->column_weight;
}

// --methods: distill and known names only, and no joint training with
// --platform-slots. False, with a message, otherwise.
bool check_methods(const Args& a) {
  if (a.platform_slots && a.methods.count("b")) {
    std::fprintf(stderr, "--platform-slots: joint training (b) would give every platform the same slot\n");
    return false;
  }
  if (!a.methods.count("distill")) {
    std::fprintf(stderr, "--methods must include distill (its student is the production model rdu selects with)\n");
    return false;
  }
  for (const std::string& m : a.methods) {
    if (m != "distill" && m != "ft" && m != "b" && m != "c1" && m != "c2" && m != "adapter" && m != "best-of" &&
        m != "best-of-trunk") {
      std::fprintf(stderr, "unknown method %s (distill, ft, b, c1, c2, adapter, best-of, best-of-trunk)\n", m.c_str());
      return false;
    }
  }
  return true;
}

// The numbers in range, and the bank levers only with a bank. False, with a
// message, otherwise.
bool check_numbers(const Args& a) {
  if (a.platforms.size() < 2 || a.epochs < 1 || a.column_epochs < 1 || a.base_epochs < 1 || a.mc_samples < 2 ||
      !(a.fraction > 0 && a.fraction <= 1) || !(a.validation >= 0 && a.validation < 1) || a.ewc < 0 ||
      a.old_weight < 0 || a.unlabeled_ratio < 0 || a.column_weight < 0 ||
      !(a.old_weight_other_kind >= 0 && std::isfinite(a.old_weight_other_kind)) ||
      !(a.old_weight_same_kind >= 0 && std::isfinite(a.old_weight_same_kind)) ||
      !(a.old_bank_ratio >= 0 && a.old_bank_ratio <= 100) ||
      !(a.feature_weight >= 0 && std::isfinite(a.feature_weight)) || !(a.student_lr >= 1e-6 && a.student_lr <= 1) ||
      !(a.teacher_mix >= 0 && a.teacher_mix <= 1) || !(a.choice_fraction > 0 && a.choice_fraction < 1)) {
    std::fprintf(stderr,
                 "bad --platforms, epochs, --mc-samples, --fraction, --validation, weights, --student-lr or "
                 "--teacher-mix\n");
    return false;
  }
  if (a.old_bank_ratio != kJobBankRatio && a.old_bank <= 0) {
    std::fprintf(stderr, "--old-bank-ratio weighs the bank: it needs --old-bank N\n");
    return false;
  }
  if (a.feature_weight > 0 && a.old_bank <= 0) {
    std::fprintf(stderr, "--feature-weight is a term on the bank: it needs --old-bank N\n");
    return false;
  }
  return true;
}

bool parse_args(int argc, char** argv, Args* a) {
  a->command = "bench_continual";
  for (int i = 1; i < argc; ++i) a->command += std::string(" ") + argv[i];
  tcl::bench::Flags flags;
  declare_flags(flags, a);
  if (!flags.parse(argc, argv)) {
    std::fprintf(stderr, "(see bench/continual.cc)\n");
    return false;
  }
  if (!tcl::bench::resolve_device_arg(&a->device)) return false;
  finish_args(a);
  return check_methods(*a) && check_numbers(*a);
}

// ---------------------------------------------------------------------------
// Files of the cache.

std::string sha12(std::string_view bytes) { return tcl::sha256_hex(bytes).substr(0, 12); }

// <cache>/<what>-<platform>-<hash of the provenance key>
std::string cache_path(const Args& a, const std::string& what, const std::string& platform, const std::string& key) {
  return a.cache + "/" + what + "-" + platform + "-" + tcl::sha256_hex(key).substr(0, 16);
}

// ---------------------------------------------------------------------------
// Records.

// A platform of the sequence: its records split by the evaluation protocol
// (onboarding/platform_data.h), and the distill lineage's selection of it.
struct SequencePlatform : tcl::onboarding::PlatformData {
  std::vector<core::Record> selected;  // the distill lineage's rdu selection (new platforms; for (b))
  std::string selected_digest;         // Selection::digest of it
  std::vector<core::Record> bank;      // --old-bank: its programs without measurements, for later distills
};

// --old-bank N: every ceil(pool / N)-th program of the pool (its tasks, never
// the held-out ones), measurements cleared: the bank later distills read.
void keep_bank(const Args& a, SequencePlatform* p) {
  const auto& pool = p->split.pool;
  if (a.old_bank <= 0 || pool.empty()) return;
  const std::size_t stride =
      (pool.size() + static_cast<std::size_t>(a.old_bank) - 1) / static_cast<std::size_t>(a.old_bank);
  for (std::size_t i = 0; i < pool.size(); i += stride) {
    p->bank.push_back(pool[i]);
    p->bank.back().costs.clear();
  }
}

// --validation's split of the pool's tasks: a salt of its own, so that it is
// not the held-out split's complement (salt 1 beside the default split's 0).
std::uint64_t validation_salt(const Args& a) { return a.split_salt + 1; }

ScoredSplit scored_split(const Args& a) {
  return a.validation > 0 ? ScoredSplit{a.validation, validation_salt(a)} : ScoredSplit{kHoldout, a.split_salt};
}

// --platform-slots: the one-hot of `name`'s place in the sequence, appended
// to its descriptor wherever the platform is encoded (its datasets, its
// evaluation, the selection's and the old-KD terms' descriptors). The model
// then holds film_hidden weights of its own per platform, which no other
// platform's input reaches: the cheapest per-platform adapter. Empty without
// the flag.
std::vector<float> platform_slot(const Args& a, const std::string& name) {
  if (!a.platform_slots) return {};
  std::vector<float> slot(a.platforms.size(), 0.0f);
  for (std::size_t i = 0; i < a.platforms.size(); ++i) {
    if (a.platforms[i] == name) slot[i] = 1.0f;
  }
  return slot;
}

bool load_platform(const Args& a, const std::string& name, bool keep_pool, SequencePlatform* p) {
  const Clock::time_point t0 = Clock::now();
  const bool validating = a.validation > 0;  // the scored split comes out of the pool
  auto data = tcl::bench::read_platform(a.data + "/" + name + "/records.jsonl.gz", name, kHoldout, a.split_salt,
                                        keep_pool || validating);
  if (!data) return false;
  static_cast<tcl::onboarding::PlatformData&>(*p) = std::move(*data);
  if (validating) p->split = tcl::onboarding::validation_split(std::move(p->split), a.validation, validation_salt(a));
  const std::vector<float> slot = platform_slot(a, name);  // --platform-slots
  p->descriptor.insert(p->descriptor.end(), slot.begin(), slot.end());
  const tcl::onboarding::PlatformSplit& s = p->split;
  std::printf(
      "%s: %lld records, %lld measured; pool %s; %s split %lld tasks / %zu records (%.1f s)\n", name.c_str(),
      static_cast<long long>(p->records), static_cast<long long>(s.measured),
      keep_pool || validating
          ? (std::to_string(s.pool.size()) + " programs in " + std::to_string(s.task_keys.size()) + " tasks").c_str()
          : "not kept",
      validating ? "validation" : "eval", static_cast<long long>(s.holdout_tasks), s.holdout.size(), seconds_since(t0));
  std::fflush(stdout);
  return true;
}

// ---------------------------------------------------------------------------
// Training and evaluation, through the cache.

struct Trained {
  std::string checkpoint, fisher;
  std::string adapter;  // FineTune::adapter's factors alone (TrainResult::adapter), when one trained
  double wall_s = 0, cpu_s = 0;
  std::int64_t params = 0, programs = 0;
  bool cached = false;
};

Result<Trained> train_cached(const Args& a, const std::string& what, const std::string& platform,
                             const std::string& cpu_key, const tr::TrainRequest& req) {
  // A GPU run differs from the CPU's by float rounding: cached apart (CPU keys as before).
  const std::string key = a.device == tr::Device::kCuda ? cpu_key + "|device cuda" : cpu_key;
  const std::string base = cache_path(a, what, platform, key);
  Trained t;
  std::string meta;
  const auto* tune = std::get_if<tr::FineTune>(&req.start);
  const bool adapter = tune != nullptr && tune->adapter.rank > 0;
  if (read_file(base + ".meta", &meta) && read_file(base + ".ckpt", &t.checkpoint) &&
      (!req.fisher.compute || read_file(base + ".fisher", &t.fisher)) &&
      (!adapter || read_file(base + ".adapter", &t.adapter))) {
    std::istringstream in(meta);
    in >> t.wall_s >> t.cpu_s >> t.params >> t.programs;
    if (in) {
      t.cached = true;
      std::printf("  %-8s %-10s cached (%s): trained %.0f s wall, %.0f s cpu on %lld programs\n", what.c_str(),
                  platform.c_str(), base.c_str(), t.wall_s, t.cpu_s, static_cast<long long>(t.programs));
      std::fflush(stdout);
      return t;
    }
  }
  const Clock::time_point t0 = Clock::now();
  const double cpu0 = cpu_seconds();
  auto r = tr::train_platform(req, [&](int epoch, int, double loss, double) {
    std::printf("  %-8s %-10s epoch %d loss %.4f (%.0f s)\n", what.c_str(), platform.c_str(), epoch, loss,
                seconds_since(t0));
    std::fflush(stdout);
    return true;
  });
  if (!r) return r.status().with_context(what + " on " + platform);
  t.wall_s = seconds_since(t0);
  t.cpu_s = cpu_seconds() - cpu0;
  t.params = r->num_parameters;
  t.programs = r->data.train_records;
  t.checkpoint = std::move(r->checkpoint);
  t.fisher = std::move(r->fisher);
  t.adapter = std::move(r->adapter);
  std::printf(
      "  %-8s %-10s trained: %lld programs, %d epochs, %lld steps; %.1f s wall (train %.1f, fisher %.1f), "
      "%.0f s cpu\n",
      what.c_str(), platform.c_str(), static_cast<long long>(t.programs), r->epochs_done,
      static_cast<long long>(r->steps), t.wall_s, r->train_s, r->fisher_s, t.cpu_s);
  std::fflush(stdout);
  if (!write_file_atomic(base + ".ckpt", t.checkpoint) ||
      (req.fisher.compute && !write_file_atomic(base + ".fisher", t.fisher)) ||
      (adapter && !write_file_atomic(base + ".adapter", t.adapter)) ||
      !write_file_atomic(base + ".meta", fmt("%.3f", t.wall_s) + " " + fmt("%.3f", t.cpu_s) + " " +
                                             std::to_string(t.params) + " " + std::to_string(t.programs) + "\n" + key +
                                             "\n")) {
    return Status::internal("cannot write " + base);
  }
  return t;
}

// A job's training request (onboarding::train_request) with the bench's
// options: no evaluation split (it is scored outside and its tasks are not
// in `records`), --base-max-records, no time budget; then the bench's own
// settings (platform slots, threads, device, no per-epoch evaluation).
tr::TrainRequest make_request(const Args& a, const SequencePlatform& p, std::span<const core::Record> records,
                              int epochs) {
  ob::JobOptions o;
  o.eval_fraction = 0;
  o.max_records = a.base_max_records;
  o.epochs = epochs;
  o.seed = a.seed;
  o.time_budget_s = 0;
  tr::TrainRequest req = ob::train_request(o, p.platform, records);
  req.data.options.descriptor_extra = platform_slot(a, p.name);
  req.resources.threads = a.threads;
  req.resources.device = a.device;
  req.resources.eval_each_epoch = false;
  return req;
}

struct Score {
  double top1_mean = NAN, top1_sum = NAN, floor_mean = NAN, floor_sum = NAN;
  std::int64_t tasks = 0, programs = 0;
  double tuning = NAN, floor_tuning = NAN;  // the tuning proxy's geometric mean (trainer/evaluation.h)
  double pairwise = NAN;                    // pairwise accuracy (random order: 0.5)
  // top-1 in sets of 64 (trainer::top1_in_sets, the promotion gate's): fewer
  // argmax flips between near-equal programs than one pick per task.
  double sets_mean = NAN, sets_sum = NAN;
};

Score score_from(const tr::RankingMetrics& m) {
  return {m.top1.mean_ratio,
          m.top1.sum_ratio,
          m.random_top1.mean_ratio,
          m.random_top1.sum_ratio,
          m.tasks,
          m.programs,
          m.tuning.geomean_ratio,
          m.random_tuning.geomean_ratio,
          m.pairwise_accuracy,
          m.top1_in_sets.mean_ratio,
          m.top1_in_sets.sum_ratio};
}

Result<Score> evaluate_cached(const Args& a, const SequencePlatform& p, const std::string& checkpoint) {
  // The split evaluate_checkpoint scores: p.split.holdout is all in it.
  const ScoredSplit scored = scored_split(a);
  const std::string key = "eval|" + p.name + "|" + tcl::sha256_hex(checkpoint) + "|" + fmt("%g", scored.fraction) +
                          "|" + std::to_string(scored.salt) + "|" + std::to_string(kMaxEvalRecords);
  const std::string path = cache_path(a, "eval", p.name, key) + ".txt";
  Score s;
  std::string text;
  if (read_file(path, &text)) {
    std::istringstream in(text);
    in >> s.top1_mean >> s.top1_sum >> s.floor_mean >> s.floor_sum >> s.tasks >> s.programs >> s.tuning >>
        s.floor_tuning >> s.pairwise >> s.sets_mean >> s.sets_sum;
    if (in) return s;  // a cache written before the tuning, pairwise or sets columns is evaluated again
  }
  tr::DatasetOptions o;
  o.eval_fraction = scored.fraction;
  o.split_salt = scored.salt;
  o.max_eval_records = kMaxEvalRecords;
  o.descriptor_extra = platform_slot(a, p.name);
  auto m = tr::evaluate_checkpoint(checkpoint, p.split.holdout, p.platform, o, a.threads);
  if (!m) return m.status().with_context("evaluate on " + p.name);
  s = score_from(*m);
  write_file_atomic(path, fmt("%.6f", s.top1_mean) + " " + fmt("%.6f", s.top1_sum) + " " + fmt("%.6f", s.floor_mean) +
                              " " + fmt("%.6f", s.floor_sum) + " " + std::to_string(s.tasks) + " " +
                              std::to_string(s.programs) + " " + fmt("%.6f", s.tuning) + " " +
                              fmt("%.6f", s.floor_tuning) + " " + fmt("%.6f", s.pairwise) + " " +
                              fmt("%.6f", s.sets_mean) + " " + fmt("%.6f", s.sets_sum) + "\n" + key + "\n");
  return s;
}

// One model's score line, in the format scripts/gpu/continual_steps.py reads:
// "  NAME on PLATFORM  top-1 MEAN/SUM tuning T sets MEAN/SUM", then the
// parameter count where one is given.
void print_score(const std::string& name, const std::string& platform, const Score& s, std::int64_t params = -1) {
  std::printf("  %-30s on %-10s top-1 %.4f/%.4f tuning %.4f sets %.4f/%.4f", name.c_str(), platform.c_str(),
              s.top1_mean, s.top1_sum, s.tuning, s.sets_mean, s.sets_sum);
  if (params >= 0) std::printf("  (%lld params)", static_cast<long long>(params));
  std::printf("\n");
}

// The rdu selection of platform k's pool, as the daemon's sample request
// makes it with `model` as the production version covering `covered`.
struct Selection {
  std::vector<std::int64_t> picks;  // pool indices
  double embed_s = 0, select_s = 0;
  std::string digest;  // of the picks alone (picks_digest): the same selection names the same downstream keys
};

// The picks' digest. The cache file also holds the selection's timings, which
// differ between two runs that pick the same programs.
std::string picks_digest(const std::vector<std::int64_t>& picks) {
  std::string text;
  for (std::int64_t i : picks) text += std::to_string(i) + " ";
  return sha12(text);
}

Result<Selection> select_cached(const Args& a, const SequencePlatform& p, const std::string& model,
                                const std::vector<std::vector<float>>& covered) {
  const std::int64_t budget = ob::budget_of_fraction(a.fraction, static_cast<std::int64_t>(p.split.pool.size()));
  const std::string key =
      "select|" + p.name + "|" + tcl::sha256_hex(model) + "|covered " + std::to_string(covered.size()) + "|budget " +
      std::to_string(budget) + "|mc " + std::to_string(a.mc_samples) + "|seed " + std::to_string(a.seed) + "|weights " +
      fmt("%g", sampler::Weights{}.r) + "," + fmt("%g", sampler::Weights{}.d) + "," + fmt("%g", sampler::Weights{}.u);
  const std::string path = cache_path(a, "select", p.name, key) + ".txt";
  Selection sel;
  std::string text;
  if (read_file(path, &text)) {
    std::istringstream in(text);
    std::int64_t n = 0;
    in >> sel.embed_s >> sel.select_s >> n;
    for (std::int64_t i = 0, x = 0; i < n && in >> x; ++i) sel.picks.push_back(x);
    if (in && static_cast<std::int64_t>(sel.picks.size()) == n) {
      sel.digest = picks_digest(sel.picks);
      return sel;
    }
    sel.picks.clear();
  }
  auto cm = tr::CostModel::load(model);
  if (!cm) return cm.status();
  auto fast = tr::StudentInference::create(**cm, tr::InferenceOptions{.threads = a.threads});
  if (!fast) return fast.status();
  Clock::time_point t0 = Clock::now();
  // The round as the daemon's sample request makes it (onboarding/round.h).
  tcl::onboarding::RoundModels models;
  models.student = tr::ServedModel{cm->get(), fast->get()};
  models.descriptor = p.descriptor;
  models.others = covered;
  tcl::onboarding::RoundPool pool(models, tr::PoolEmbeddingOptions{a.mc_samples, a.seed});
  const tcl::onboarding::PlatformSplit& split = p.split;
  for (std::size_t i = 0; i < split.pool.size(); ++i) {
    if (Status s = pool.add_candidate(split.task[i], split.pool[i].steps); !s) return s;
  }
  if (Status s = pool.finish(static_cast<std::int32_t>(split.task_keys.size())); !s) return s;
  sel.embed_s = seconds_since(t0);
  tcl::onboarding::RoundOptions so;
  so.strategy = sampler::Strategy::kRdu;
  so.seed = a.seed;
  t0 = Clock::now();
  auto picks = tcl::onboarding::select_round(pool, budget, so);
  if (!picks) return picks.status();
  sel.select_s = seconds_since(t0);
  for (const sampler::Pick& k : *picks) sel.picks.push_back(k.index);
  std::string out = fmt("%.3f", sel.embed_s) + " " + fmt("%.3f", sel.select_s) + " " + std::to_string(sel.picks.size());
  for (std::int64_t i : sel.picks) out += " " + std::to_string(i);
  out += "\n";
  write_file_atomic(path, out);
  sel.digest = picks_digest(sel.picks);
  return sel;
}

// ---------------------------------------------------------------------------
// Results.

struct Cell {
  Score score;
  std::int64_t params = 0;
};

struct Timing {
  std::string method, what;
  double wall_s = 0, cpu_s = 0;
  std::int64_t programs = 0;
  bool cached = false;
};

struct StepResult {
  std::string platform;  // learned at this step
  std::int64_t pool = 0, selected = 0;
  std::map<std::string, std::map<std::string, Cell>> cells;  // method → platform → cell
  std::map<std::string, Score> floors;                       // platform → random floor
  // Forward transfer: lineage → platform not learned yet → its zero-shot score
  // (the lineage's model for a platform it has not learned: the trunk).
  std::map<std::string, std::map<std::string, Score>> zero_shot;
  std::map<std::string, std::string> choices;  // best-of lineage → the candidate chosen for this step's platform
  std::vector<Timing> timings;
  double embed_s = 0, select_s = 0;
};

// The best-of lineages' row labels (lineage_summary.py reads them).
constexpr char kBestOfName[] = "(e) best-of";
constexpr char kBestOfTrunkName[] = "(f) best-of, trunk KD";

struct Lineage {
  std::string name;  // row label
  bool distill = false;
  bool adapter = false;  // (d): a per-platform adapter on the base's frozen trunk ("method": "adapter")
  bool best_of = false;  // (e): the student as the trunk, per platform the model that serves it best (best_of.h)
  bool old_kd_from_trunk = false;  // (f): best-of whose student takes the old platforms' KD from the trunk
  double old_weight = 0, ewc = 0, unlabeled_ratio = 0, column_weight = 0;
  bool column_weight_constant = false;        // column_weight as given at every step, not per old platform (the job's)
  double old_weight_other_kind = 1;           // --old-weight-other-kind (the main lineage's)
  double old_weight_same_kind = 1;            // --old-weight-same-kind (the main lineage's)
  bool student_from_column = false;           // --student-from-column (the main lineage's)
  double old_bank_ratio = kJobBankRatio;      // --old-bank-ratio (the main lineage's)
  double feature_weight = kJobFeatureWeight;  // --feature-weight (the main lineage's)
  double student_lr = kUnnamedStudentLr;      // --student-lr (the main lineage's; the extra's as before)
  double teacher_mix = kJobTeacherMix;        // --teacher-mix (the main lineage's)
  std::string model{}, fisher{};              // current version (and its Fisher for distill); (d): format 2
  // (e) with --ensembles: the step's fine-tune (its column) and the adapter on
  // its parent's trunk, both of the platform just learned (plain checkpoints).
  std::string step_column{}, step_adapter_on_trunk{};
};

// (c1)/(c2): one model per platform.
bool is_separate(const std::string& method) { return method.rfind("(c", 0) == 0; }

std::string cell_text(const Score& s) {
  return fmt("%.4f", s.top1_mean) + " (" + fmt("%.4f", s.top1_sum) + "), tuning " + fmt("%.3f", s.tuning) +
         ", pairwise " + fmt("%.3f", s.pairwise);
}

// The header's words for --old-weight-other-kind / --old-weight-same-kind: none at 1 (as the job).
std::string on_new_programs(const std::string& kind, double factor) {
  if (factor == 1) return {};
  return "; an old platform of " + kind + " weighs " + fmt("%g", factor) +
         " x old_weight on the new platform's programs, old_weight on the bank";
}

// The header: the command, the build and the settings of the run.
void render_header(const Args& a, std::ostringstream& md) {
  md << "# Continual distillation along ";
  for (std::size_t i = 0; i < a.platforms.size(); ++i) md << (i ? " → " : "") << a.platforms[i];
  md << " (issue 6 item 8)\n\n";
  md << "Command (repo root, after the build below): `nice -n 10 build-continual/bench/" << a.command << "`\n\n";
  md << "Build: `cmake -S . -B build-continual -G Ninja -DCMAKE_BUILD_TYPE=Release -DTCL_BUILD_TESTS=OFF && "
        "cmake --build build-continual -j2 --target bench_continual`\n\n";
  if (a.validation > 0) {
    md << "Settings: **validation mode** (--validation " << fmt("%g", a.validation)
       << ", for choosing settings; report on the held-out split): the held-out split (core::in_holdout(canonical "
          "key, 0.3, salt "
       << a.split_salt << ")) is dropped unscored; the scored split is core::in_holdout(canonical key, "
       << fmt("%g", a.validation) << ", salt " << validation_salt(a)
       << ") of the other tasks' pool records (scored with evaluate_checkpoint, max_eval_records 20000); pool = the "
          "rest. Base: ";
  } else {
    md << "Settings: eval split = core::in_holdout(canonical key, 0.3, salt " << a.split_salt
       << ") of each platform (scored with "
          "evaluate_checkpoint, max_eval_records 20000); pool = measured records of the other tasks, one per "
          "program. Base: ";
  }
  md << a.base_epochs << " epochs on ≤" << a.base_max_records << " pool programs, seed " << a.base_seed
     << ". Per new platform: rdu selects " << fmt("%g", a.fraction * 100)
     << "% of the pool (PoolEmbedder with the "
        "distill lineage's production model, mc_samples "
     << a.mc_samples << ", others = covered platforms, seed " << a.seed << "); distill = active column ("
     << a.column_epochs << " epochs) + student (" << a.epochs << " epochs, ewc " << fmt("%g", a.ewc) << ", old_weight "
     << fmt("%g", a.old_weight) << ", column_weight " << fmt("%g", a.column_weight)
     << (a.column_weight_constant ? "" : " per old platform") << ", unlabeled_ratio " << fmt("%g", a.unlabeled_ratio)
     << ": the unselected rest of the pool as KD inputs"
     << on_new_programs("another target kind", a.old_weight_other_kind)
     << on_new_programs("the new one's target kind", a.old_weight_same_kind)
     << (a.student_from_column ? "; the student starts from the active column, EWC anchored at the teacher" : "")
     << (a.old_bank_ratio == kJobBankRatio ? std::string()
                                           : "; " + fmt("%g", a.old_bank_ratio) + " bank batches per measured batch")
     << (a.feature_weight == kJobFeatureWeight ? std::string()
                                               : "; feature KD " + fmt("%g", a.feature_weight) + " on the bank")
     << (a.teacher_mix == kJobTeacherMix
             ? std::string()
             : "; the student mixed back with its teacher, teacher's share " + fmt("%g", a.teacher_mix))
     << "; the student's learning rate " << fmt("%g", a.student_lr) << "); ft / c1 = " << a.epochs
     << " epochs on the same selection; b = a fresh student trained jointly on the "
        "first platform's pool (as the base saw it) and the selection of every later platform ("
     << a.base_epochs << " epochs); c2 = a fresh student on the whole pool (" << a.epochs << " epochs)"
     << (a.methods.count("adapter")
             ? "; d = per platform a rank-" + std::to_string(tr::kDistillAdapter.rank) + " adapter on " +
                   std::string(tr::adapter_layers_name(tr::kDistillAdapter.layers)) +
                   " dense layers of the base's frozen trunk (" + std::to_string(tr::kDistillAdapterEpochs) +
                   " epochs, learning rate " + fmt("%g", tr::kDistillAdapterLearningRate) +
                   ") on the same selection, each platform scored with its own"
             : std::string())
     << ". Threads " << a.threads << ", no time budget, box shared (2 cores).\n\n";
  md << "Cells: top-1 mean ratio (sum ratio), and the tuning proxy (geometric mean over tasks of the trials to a "
        "program within 5% of the best, over a random order's; < 1 is better) and pairwise accuracy on the platform's "
        "eval split. (c1)/(c2) "
        "keep one model per "
        "platform: a column is that platform's own model (x86-24c's is the base), so they cannot forget; their "
        "parameter count is the sum over platforms. (b) is the multi-task upper bound at the same measurement "
        "budget: it sees every platform's training data at once (no old-data rule); (c2) shows what the whole pool "
        "(10x the budget) would give.\n\n";
}

// Step s's cells: every row on every platform seen so far, and the floor.
void render_step_table(const std::vector<StepResult>& steps, std::size_t s, const std::vector<std::string>& order,
                       std::ostringstream& md) {
  const StepResult& st = steps[s];
  md << "## Step " << s << ": " << (s == 0 ? "base on " : "+ ") << st.platform;
  if (s > 0) md << " (pool " << st.pool << " programs, selected " << st.selected << ")";
  md << "\n\n| method |";
  for (std::size_t j = 0; j <= s; ++j) md << " " << steps[j].platform << " |";
  md << " params |\n|---|";
  for (std::size_t j = 0; j <= s; ++j) md << "---|";
  md << "---|\n";
  for (const std::string& m : order) {
    auto it = st.cells.find(m);
    if (it == st.cells.end()) continue;
    md << "| " << m << " |";
    std::int64_t params = 0;
    for (std::size_t j = 0; j <= s; ++j) {
      auto c = it->second.find(steps[j].platform);
      md << " " << (c == it->second.end() ? std::string("–") : cell_text(c->second.score)) << " |";
      if (c != it->second.end()) params = std::max(params, c->second.params);
    }
    // c1/c2: one model per platform, the parameters add up.
    if (is_separate(m)) {
      params = 0;
      for (const auto& [pl, c] : it->second) params += c.params;
    }
    md << " " << params << " |\n";
  }
  md << "| random floor |";
  for (std::size_t j = 0; j <= s; ++j) {
    auto f = st.floors.find(steps[j].platform);
    md << " " << (f == st.floors.end() ? std::string("–") : cell_text(f->second)) << " |";
  }
  md << " |\n\n";
}

// Step s's forgetting: each lineage's top-1 now against right after each old platform was learned.
void render_forgetting(const std::vector<StepResult>& steps, std::size_t s, const std::vector<std::string>& order,
                       std::ostringstream& md) {
  const StepResult& st = steps[s];
  md << "Forgetting (top-1 mean now − right after the platform was learned; sum ratio in parentheses):\n\n"
        "| method |";
  for (std::size_t j = 0; j < s; ++j) md << " " << steps[j].platform << " |";
  md << "\n|---|";
  for (std::size_t j = 0; j < s; ++j) md << "---|";
  md << "\n";
  for (const std::string& m : order) {
    if (is_separate(m)) continue;
    auto it = st.cells.find(m);
    if (it == st.cells.end()) continue;
    md << "| " << m << " |";
    for (std::size_t j = 0; j < s; ++j) {
      const std::string& pl = steps[j].platform;
      auto learned = steps[j].cells.find(m);
      auto now = it->second.find(pl);
      if (learned == steps[j].cells.end() || now == it->second.end() || !learned->second.count(pl)) {
        md << " – |";
        continue;
      }
      const Score& l = learned->second.at(pl).score;
      md << " " << fmt("%+.4f", now->second.score.top1_mean - l.top1_mean) << " ("
         << fmt("%+.4f", now->second.score.top1_sum - l.top1_sum) << ") |";
    }
    md << "\n";
  }
  md << "\n";
}

// Step s's timings, with each distill lineage's column + student total.
void render_timings(const StepResult& st, std::size_t s, std::ostringstream& md) {
  md << "Timings (wall s on the shared box; cpu s of the process, 2 threads):";
  if (s > 0)
    md << " rdu selection: embed " << fmt("%.1f", st.embed_s) << " s + select " << fmt("%.2f", st.select_s) << " s.";
  md << "\n\n| method | phase | programs | wall s | cpu s |\n|---|---|---|---|---|\n";
  std::map<std::string, std::pair<double, double>> distill_total;
  for (const Timing& t : st.timings) {
    md << "| " << t.method << " | " << t.what << " | " << t.programs << " | " << fmt("%.1f", t.wall_s) << " | "
       << fmt("%.0f", t.cpu_s) << " |\n";
    if (t.what == "column" || t.what == "student") {
      distill_total[t.method].first += t.wall_s;
      distill_total[t.method].second += t.cpu_s;
    }
  }
  for (const auto& [m, w] : distill_total) {
    md << "| " << m << " | **column + student** | " << st.selected << " | **" << fmt("%.1f", w.first) << "** | "
       << fmt("%.0f", w.second) << " |\n";
  }
  md << "\n";
}

// The targets of issue 6 item 8, per distill lineage.
void render_targets(const std::vector<StepResult>& steps, const std::vector<std::string>& order,
                    std::ostringstream& md) {
  md << "## Targets\n\n";
  const bool have_joint = std::find(order.begin(), order.end(), "(b) joint") != order.end();
  const std::string upper = have_joint ? "(b) joint" : "(c2) separate, whole pool";
  const std::string upper_tag = have_joint ? "(b)" : "(c2)";
  for (const std::string& m : order) {
    if (m.rfind("distill", 0) != 0 && m != kBestOfName && m != kBestOfTrunkName) continue;
    double worst = 0;
    std::string worst_at = "none";
    std::set<std::int64_t> params;
    for (std::size_t s = 0; s < steps.size(); ++s) {
      auto now = steps[s].cells.find(m);
      if (now == steps[s].cells.end()) continue;
      for (const auto& [pl, c] : now->second) params.insert(c.params);
      for (std::size_t j = 0; j < s; ++j) {
        const std::string& pl = steps[j].platform;
        auto learned = steps[j].cells.find(m);
        if (learned == steps[j].cells.end() || !learned->second.count(pl) || !now->second.count(pl)) continue;
        const double d = now->second.at(pl).score.top1_mean - learned->second.at(pl).score.top1_mean;
        if (d < worst) {
          worst = d;
          worst_at = pl + " at step " + std::to_string(s);
        }
      }
    }
    md << "- **" << m << "**: largest top-1 (mean) loss of an old platform " << fmt("%+.4f", worst) << " (" << worst_at
       << "; target ≥ −0.01: " << (worst >= -0.01 ? "met" : "NOT met") << ")";
    for (std::size_t s = 1; s < steps.size(); ++s) {
      auto d = steps[s].cells.find(m);
      auto u = steps[s].cells.find(upper);
      if (d == steps[s].cells.end() || u == steps[s].cells.end()) continue;
      const double gap =
          d->second.at(steps[s].platform).score.top1_mean - u->second.at(steps[s].platform).score.top1_mean;
      md << "; new " << steps[s].platform << " vs " << upper_tag << ": " << fmt("%+.4f", gap)
         << " (target ≥ −0.03: " << (gap >= -0.03 ? "met" : "NOT met") << ")";
    }
    md << "; parameter count "
       << (params.size() == 1 ? "constant (" + std::to_string(*params.begin()) + ")" : "NOT constant");
    for (std::size_t s = 1; s < steps.size(); ++s) {
      double wall = 0;
      for (const Timing& t : steps[s].timings) {
        if (t.method == m && (t.what == "column" || t.what == "student")) wall += t.wall_s;
      }
      if (wall <= 0 || steps[s].selected <= 0) continue;
      md << "; step " << s << " column + student " << fmt("%.0f", wall) << " s for " << steps[s].selected
         << " programs (linear in programs: " << fmt("%.0f", wall * 4000.0 / static_cast<double>(steps[s].selected))
         << " s for 10% of a 40k pool; target ≤ 300 s)";
    }
    md << ".\n";
  }
  md << "\n";
}

// Forward transfer: each lineage's zero-shot score on the platforms it has
// not learned, after each step (issue 48 item 2: it should rise as the lineage grows).
void render_forward(const std::vector<StepResult>& steps, const Args& a, const std::vector<std::string>& order,
                    std::ostringstream& md) {
  bool any = false;
  for (const StepResult& st : steps) any = any || !st.zero_shot.empty();
  if (!any) return;
  md << "## Forward transfer: zero-shot on platforms not yet learned\n\nEach lineage's model for an unknown platform "
        "(its trunk) on each later platform's scored split, after each step: top-1 mean (tuning proxy).\n\n"
        "| lineage | after step |";
  for (std::size_t j = 1; j < a.platforms.size(); ++j) md << " " << a.platforms[j] << " |";
  md << "\n|---|---|";
  for (std::size_t j = 1; j < a.platforms.size(); ++j) md << "---|";
  md << "\n";
  for (const std::string& m : order) {
    for (std::size_t s = 0; s < steps.size(); ++s) {
      auto it = steps[s].zero_shot.find(m);
      if (it == steps[s].zero_shot.end()) continue;
      md << "| " << m << " | " << s << " (" << steps[s].platform << ") |";
      for (std::size_t j = 1; j < a.platforms.size(); ++j) {
        auto c = it->second.find(a.platforms[j]);
        md << " "
           << (c == it->second.end() ? std::string("–")
                                     : fmt("%.4f", c->second.top1_mean) + " (" + fmt("%.3f", c->second.tuning) + ")")
           << " |";
      }
      md << "\n";
    }
  }
  md << "\n";
}

std::string render(const Args& a, const std::vector<StepResult>& steps, const std::vector<std::string>& order,
                   double total_s) {
  std::ostringstream md;
  render_header(a, md);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    render_step_table(steps, s, order, md);
    if (s > 0) render_forgetting(steps, s, order, md);
    if (!steps[s].timings.empty()) render_timings(steps[s], s, md);
  }
  if (steps.size() > 1) render_targets(steps, order, md);
  render_forward(steps, a, order, md);
  for (std::size_t s = 1; s < steps.size(); ++s) {
    for (const auto& [lineage, chosen] : steps[s].choices) {
      md << "- " << lineage << " at step " << s << " (" << steps[s].platform << "): " << chosen << "\n";
    }
  }
  md << "Total wall time of this run: " << fmt("%.0f", total_s) << " s (cached steps count their load only).\n";
  return md.str();
}

int fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "%s: %s\n", what.c_str(), s.to_string().c_str());
  return 1;
}

// The rows of the tables: lineages that carry a model along the sequence,
// then the methods trained anew at every step.
const std::string kJoint = "(b) joint", kC1 = "(c1) separate, 10%", kC2 = "(c2) separate, whole pool";

std::vector<Lineage> make_lineages(const Args& a) {
  std::vector<Lineage> lineages;
  if (a.methods.count("distill")) {
    lineages.push_back({.name = "distill",
                        .distill = true,
                        .old_weight = a.old_weight,
                        .ewc = a.ewc,
                        .unlabeled_ratio = a.unlabeled_ratio,
                        .column_weight = a.column_weight,
                        .column_weight_constant = a.column_weight_constant,
                        .old_weight_other_kind = a.old_weight_other_kind,
                        .old_weight_same_kind = a.old_weight_same_kind,
                        .student_from_column = a.student_from_column,
                        .old_bank_ratio = a.old_bank_ratio,
                        .feature_weight = a.feature_weight,
                        .student_lr = a.student_lr,
                        .teacher_mix = a.teacher_mix});
  }
  if (a.extra) {
    // The column weight is named only where it is not the default's, so
    // that older logs and this one name the same lineage alike.
    const std::string column =
        a.extra_column == kUnnamedColumnWeight ? std::string() : ", column_weight " + fmt("%g", a.extra_column);
    lineages.push_back({.name = "distill (old_weight " + fmt("%g", a.extra_old) + ", ewc " + fmt("%g", a.extra_ewc) +
                                ", unlabeled " + fmt("%g", a.extra_unlabeled) + column + ")",
                        .distill = true,
                        .old_weight = a.extra_old,
                        .ewc = a.extra_ewc,
                        .unlabeled_ratio = a.extra_unlabeled,
                        .column_weight = a.extra_column,
                        .column_weight_constant = true});
  }
  if (a.methods.count("ft")) lineages.push_back({.name = "(a) fine-tune"});
  if (a.methods.count("adapter")) lineages.push_back({.name = "(d) adapter", .adapter = true});
  if (a.methods.count("best-of")) {
    // The main distill lineage's settings: at step 1 its student and column are best-of's (one cache entry).
    Lineage l = lineages.front();
    l.name = kBestOfName;
    l.distill = false;
    l.best_of = true;
    lineages.push_back(l);
  }
  if (a.methods.count("best-of-trunk")) {
    // (e) with every old platform's KD from the parent's trunk, as the
    // student lineage's: its student is distill's (one cache entry).
    Lineage l = lineages.front();
    l.name = kBestOfTrunkName;
    l.distill = false;
    l.best_of = true;
    l.old_kd_from_trunk = true;
    lineages.push_back(l);
  }
  return lineages;
}

std::vector<std::string> row_order(const Args& a, const std::vector<Lineage>& lineages) {
  std::vector<std::string> order;
  for (const Lineage& l : lineages) order.push_back(l.name);
  if (a.methods.count("b")) order.push_back(kJoint);
  if (a.methods.count("c1")) order.push_back(kC1);
  if (a.methods.count("c2")) order.push_back(kC2);
  return order;
}

// The random-order floor of a score, as its own row.
Score floor_of(const Score& s) {
  Score f = s;
  f.top1_mean = s.floor_mean;
  f.top1_sum = s.floor_sum;
  f.tuning = s.floor_tuning;
  f.pairwise = 0.5;
  f.sets_mean = f.sets_sum = NAN;  // not computed for random orders
  return f;
}

// Step 0: the base on the first platform's pool; every row starts from it.
// Returns the process exit code (0 = go on).
int run_base_step(const Args& a, SequencePlatform& p0, std::vector<Lineage>& lineages, StepResult* st) {
  const std::string key = "base|" + a.data + "/" + a.platforms[0] + "|max_records " +
                          std::to_string(a.base_max_records) + "|epochs " + std::to_string(a.base_epochs) + "|seed " +
                          std::to_string(a.base_seed) + "|threads " + std::to_string(a.threads) + "|holdout 0.3 salt " +
                          std::to_string(a.split_salt) + " dedup";
  const std::string path = cache_path(a, "base", a.platforms[0], key);
  const bool cached = std::filesystem::exists(path + ".meta");
  if (!load_platform(a, a.platforms[0], !cached || a.methods.count("b") || a.old_bank > 0, &p0)) return 1;
  keep_bank(a, &p0);
  tr::TrainRequest req = make_request(a, p0, p0.split.pool, a.base_epochs);
  req.optimisation.seed = a.base_seed;
  auto base = train_cached(a, "base", p0.name, key, req);
  if (!base) return fail("base", base.status());
  if (!a.methods.count("b")) p0.split.pool = {};  // (b) trains on it again at every step
  p0.split.task = {};
  auto score = evaluate_cached(a, p0, base->checkpoint);
  if (!score) return fail("base", score.status());
  st->platform = p0.name;
  st->floors[p0.name] = floor_of(*score);
  for (Lineage& l : lineages) {
    l.model = base->checkpoint;
    l.fisher = base->fisher;
    st->cells[l.name][p0.name] = {*score, base->params};
  }
  if (a.methods.count("c1")) st->cells[kC1][p0.name] = {*score, base->params};
  if (a.methods.count("c2")) st->cells[kC2][p0.name] = {*score, base->params};
  if (a.methods.count("b")) st->cells[kJoint][p0.name] = {*score, base->params};
  st->timings.push_back({"base", "train", base->wall_s, base->cpu_s, base->programs, base->cached});
  std::printf(
      "step 0 (%s): base top-1 %.4f/%.4f (mean/sum) tuning %.4f sets %.4f/%.4f on %lld eval tasks; %lld params\n",
      p0.name.c_str(), score->top1_mean, score->top1_sum, score->tuning, score->sets_mean, score->sets_sum,
      static_cast<long long>(score->tasks), static_cast<long long>(base->params));
  std::fflush(stdout);
  return 0;
}

// The rdu selections of one step's pool, one per model that selects (the
// first lineage's is shared by fine-tuning and c1), computed once each.
class StepSelections {
 public:
  StepSelections(const Args& a, const SequencePlatform& p, const std::vector<std::vector<float>>& covered)
      : a_(a), p_(p), covered_(covered) {}

  Result<const Selection*> of(const std::string& model) {
    const std::string sha = tcl::sha256_hex(model);
    auto it = by_model_.find(sha);
    if (it == by_model_.end()) {
      auto sel = select_cached(a_, p_, model, covered_);
      if (!sel) return sel.status();
      std::printf("  rdu selection on %s: %zu of %zu (embed %.1f s, select %.2f s) [%s]\n", p_.name.c_str(),
                  sel->picks.size(), p_.split.pool.size(), sel->embed_s, sel->select_s, sel->digest.c_str());
      std::fflush(stdout);
      it = by_model_.emplace(sha, std::move(*sel)).first;
    }
    return &it->second;
  }
  std::vector<core::Record> records_of(const Selection& sel) const {
    std::vector<core::Record> out;
    out.reserve(sel.picks.size());
    for (std::int64_t i : sel.picks) out.push_back(p_.split.pool[static_cast<std::size_t>(i)]);
    return out;
  }
  // The unmeasured rest of the pool: distillation inputs without labels.
  std::vector<core::Record> unlabeled_of(const Selection& sel) const {
    std::vector<char> picked(p_.split.pool.size(), 0);
    for (std::int64_t i : sel.picks) picked[static_cast<std::size_t>(i)] = 1;
    std::vector<core::Record> out;
    out.reserve(p_.split.pool.size() - sel.picks.size());
    for (std::size_t i = 0; i < p_.split.pool.size(); ++i) {
      if (!picked[i]) out.push_back(p_.split.pool[i]);
    }
    return out;
  }

 private:
  const Args& a_;
  const SequencePlatform& p_;
  const std::vector<std::vector<float>>& covered_;
  std::map<std::string, Selection> by_model_;  // model sha → selection
};

// The factors of DistillLevers::old_weight_on_new_programs, for a cache key.
std::string join_factors(const tr::DistillLevers& t) {
  std::string out;
  for (double f : t.old_weight_on_new_programs) out += (out.empty() ? "" : ",") + fmt("%g", f);
  return out;
}

// The active column: `teacher` (its model of p) fine-tuned on `records`
// (whose selection `digest` names), --column-epochs, no Fisher.
Result<Trained> column_cached(const Args& a, const SequencePlatform& p, const std::string& teacher,
                              std::span<const core::Record> records, const std::string& digest) {
  tr::TrainRequest col = make_request(a, p, records, a.column_epochs);
  col.start = tr::FineTune{.init_checkpoint = teacher};
  col.fisher.compute = false;
  const std::string col_key = "column|" + p.name + "|teacher " + tcl::sha256_hex(teacher) + "|sel " + digest +
                              "|epochs " + std::to_string(a.column_epochs) + "|seed " + std::to_string(a.seed);
  return train_cached(a, "column", p.name, col_key, col);
}

// A distill lineage's student from `teacher` (a plain checkpoint) and its
// Fisher on `records` (selection `digest`) with `column` as the column; with
// `old_teachers` (one per covered platform; best-of) each old platform's KD
// target is its own model, named in the key where one differs from the teacher.
Result<Trained> student_cached(const Args& a, const SequencePlatform& p, const std::vector<std::vector<float>>& covered,
                               std::span<const core::Record> old_bank, const Lineage& l, const std::string& teacher,
                               const std::string& fisher, const Trained& column, std::span<const core::Record> records,
                               std::span<const core::Record> unlabeled, const std::string& digest,
                               const std::vector<std::string>& old_teachers = {}) {
  const std::string teacher_sha = tcl::sha256_hex(teacher);
  // Student: the distill job's plan (onboarding::plan_distillation) of the
  // lineage's weights, then what the job does not take: a constant column
  // weight, and the bench's levers (trainer::DistillLevers).
  tr::DistillTargets weights;
  weights.old_weight = l.old_weight;
  weights.ewc_weight = l.ewc;
  weights.unlabeled_ratio = l.unlabeled_ratio;
  weights.column_weight = l.column_weight;
  weights.old_bank_ratio = l.old_bank_ratio;
  tr::DistillTargets targets = tcl::onboarding::plan_distillation(weights, {.column_checkpoint = column.checkpoint,
                                                                            .teacher_fisher = fisher,
                                                                            .old_descriptors = covered,
                                                                            .unlabeled = unlabeled,
                                                                            .old_bank = old_bank});
  if (l.column_weight_constant) targets.column_weight = l.column_weight;
  std::string old_teachers_key;
  for (std::size_t j = 0; j < old_teachers.size(); ++j) {
    targets.old_teachers.emplace_back(old_teachers[j]);
    const std::string sha = tcl::sha256_hex(old_teachers[j]);
    if (sha != teacher_sha) old_teachers_key += "|old " + std::to_string(j) + " from " + sha;
  }
  tr::DistillLevers levers;  // the bench's levers (bench/lib/distill_levers.h)
  levers.feature_weight = l.feature_weight;
  levers.teacher_mix = l.teacher_mix;
  levers.old_weight_on_new_programs =
      tcl::bench::old_weight_on_new_programs(p.descriptor, covered, l.old_weight_other_kind, l.old_weight_same_kind);
  levers.student_from_column = l.student_from_column;
  tr::TrainRequest req = make_request(a, p, records, a.epochs);
  req.optimisation.learning_rate = l.student_lr;
  req.start = tr::Distill{.teacher = {.init_checkpoint = teacher}, .targets = targets, .levers = levers};
  const std::string key =
      "distill|" + p.name + "|teacher " + teacher_sha + "|fisher " + tcl::sha256_hex(fisher) + "|column " +
      tcl::sha256_hex(column.checkpoint) + "|sel " + digest + "|old " + std::to_string(covered.size()) + " w " +
      fmt("%g", l.old_weight) + "|ewc " + fmt("%g", l.ewc) +
      // The weight this step trains with: at step 1 a per-old lineage and a constant one share their student.
      (targets.column_weight == kUnnamedColumnWeight ? std::string()
                                                     : "|column_weight " + fmt("%g", targets.column_weight)) +
      // Named only where a factor is not 1, so that a step with every old platform of k's kind is shared.
      (levers.old_weight_on_new_programs.empty() ? std::string() : "|old on k " + join_factors(levers)) +
      (levers.student_from_column ? "|from column" : "") +
      (l.unlabeled_ratio > 0 ? "|unlabeled " + fmt("%g", l.unlabeled_ratio) + " of " +
                                   std::to_string(unlabeled.size()) + " max " + std::to_string(targets.max_unlabeled)
                             : std::string()) +
      (old_bank.empty() ? std::string() : "|old bank " + std::to_string(old_bank.size())) +
      // Named only where it is not the job's, so that earlier caches still serve the default.
      (l.old_bank_ratio == kJobBankRatio ? std::string() : "|bank ratio " + fmt("%g", l.old_bank_ratio)) +
      // Named only where the term trains (a weight and a bank), so that the job's students are shared.
      (levers.feature_weight == kJobFeatureWeight || targets.old_bank.empty()
           ? std::string()
           : "|feature " + fmt("%g", levers.feature_weight)) +
      (l.student_lr == kUnnamedStudentLr ? std::string() : "|lr " + fmt("%g", l.student_lr)) +
      (l.teacher_mix == kJobTeacherMix ? std::string() : "|teacher mix " + fmt("%g", l.teacher_mix)) +
      old_teachers_key + "|epochs " + std::to_string(a.epochs) + "|seed " + std::to_string(a.seed);
  return train_cached(a, "distill", p.name, key, req);
}

// A distill lineage's step: its own selection, the active column, then the
// student from the lineage's model. Returns the process exit code (0 = go on).
int distill_step(const Args& a, const SequencePlatform& p, const std::vector<std::vector<float>>& covered,
                 std::span<const core::Record> old_bank, StepSelections& selections, Lineage& l, StepResult* st) {
  auto sel = selections.of(l.model);
  if (!sel) return fail("selection", sel.status());
  const std::vector<core::Record> records = selections.records_of(**sel);
  auto column = column_cached(a, p, l.model, records, (*sel)->digest);
  if (!column) return fail(l.name, column.status());
  // The student learns k from the column's KD and the selection's labels: the
  // column's score on k is the reference it is compared with (printed beside
  // the methods', in no table).
  auto column_score = evaluate_cached(a, p, column->checkpoint);
  if (!column_score) return fail(l.name, column_score.status());
  print_score("column of " + l.name, p.name, *column_score);
  const std::vector<core::Record> unlabeled =
      l.unlabeled_ratio > 0 ? selections.unlabeled_of(**sel) : std::vector<core::Record>{};
  auto student =
      student_cached(a, p, covered, old_bank, l, l.model, l.fisher, *column, records, unlabeled, (*sel)->digest);
  if (!student) return fail(l.name, student.status());
  st->timings.push_back({l.name, "column", column->wall_s, column->cpu_s, column->programs, column->cached});
  st->timings.push_back({l.name, "student", student->wall_s, student->cpu_s, student->programs, student->cached});
  l.model = std::move(student->checkpoint);
  l.fisher = std::move(student->fisher);
  return 0;
}

// A fine-tune lineage's step: the lineage's model fine-tuned on the shared selection.
int fine_tune_step(const Args& a, const SequencePlatform& p, const std::vector<core::Record>& shared_records,
                   const Selection& shared, Lineage& l, StepResult* st) {
  tr::TrainRequest req = make_request(a, p, shared_records, a.epochs);
  req.start = tr::FineTune{.init_checkpoint = l.model};
  req.fisher.compute = false;
  const std::string key = "ft|" + p.name + "|init " + tcl::sha256_hex(l.model) + "|sel " + shared.digest + "|epochs " +
                          std::to_string(a.epochs) + "|seed " + std::to_string(a.seed);
  auto ft = train_cached(a, "ft", p.name, key, req);
  if (!ft) return fail(l.name, ft.status());
  st->timings.push_back({l.name, "fine-tune", ft->wall_s, ft->cpu_s, ft->programs, ft->cached});
  l.model = std::move(ft->checkpoint);
  return 0;
}

// An adapter (the job's: trainer::kDistillAdapter, its epochs and learning
// rate) on `model`'s trunk, trained on `records` (selection `digest`).
Result<Trained> adapter_cached(const Args& a, const SequencePlatform& p, const std::string& model,
                               std::span<const core::Record> records, const std::string& digest) {
  // The job's method (onboarding/distill.h): the adapter on the model's trunk.
  tr::TrainRequest req = make_request(a, p, records, tr::kDistillAdapterEpochs);
  req.optimisation.learning_rate = tr::kDistillAdapterLearningRate;
  std::string trunk;
  if (Status s = ob::start_adapter_distill(model, tr::FineTune{.adapter = tr::kDistillAdapter}, &trunk, &req); !s) {
    return s;
  }
  const std::string key = "adapter|" + p.name + "|trunk " + tcl::sha256_hex(trunk) + "|sel " + digest + "|rank " +
                          std::to_string(tr::kDistillAdapter.rank) + " " +
                          std::string(tr::adapter_layers_name(tr::kDistillAdapter.layers)) + "|lr " +
                          fmt("%g", tr::kDistillAdapterLearningRate) + "|epochs " +
                          std::to_string(tr::kDistillAdapterEpochs) + "|seed " + std::to_string(a.seed);
  return train_cached(a, "adapter", p.name, key, req);
}

// An adapter lineage's step (d), as a distill job with "method": "adapter"
// makes it: an adapter for this platform (trainer::kDistillAdapter, its
// epochs and learning rate) fine-tuned on the lineage's trunk, which is the
// base's and never trains, on the shared selection; then kept in the
// lineage's checkpoint beside the earlier platforms' (attach_adapter).
int adapter_step(const Args& a, const SequencePlatform& p, const std::vector<core::Record>& shared_records,
                 const Selection& shared, Lineage& l, StepResult* st) {
  auto t = adapter_cached(a, p, l.model, shared_records, shared.digest);
  if (!t) return fail(l.name, t.status());
  auto kept = tr::attach_adapter(l.model, p.name, t->adapter);
  if (!kept) return fail(l.name, kept.status());
  st->timings.push_back({l.name, "adapter", t->wall_s, t->cpu_s, t->programs, t->cached});
  l.model = std::move(*kept);
  return 0;
}

// Choice kSoup's model of p (onboarding/best_of.h): the mean of the weights
// of `column` and the adapter on `trunk` folded, both trained on `records`;
// each part's held-out score printed beside the soup's.
Result<std::string> soup_model(const Args& a, const SequencePlatform& p, const Lineage& l, const std::string& trunk,
                               const std::string& column, std::span<const core::Record> records,
                               const std::string& digest, StepResult* st) {
  auto adapter = adapter_cached(a, p, trunk, records, digest);
  if (!adapter) return adapter.status();
  st->timings.push_back({l.name, "adapter", adapter->wall_s, adapter->cpu_s, adapter->programs, adapter->cached});
  auto soup = tr::interpolate_checkpoints(column, adapter->checkpoint, 0.5);
  if (!soup) return soup.status();
  for (const auto& [what, model] :
       {std::pair<std::string, const std::string*>{"adapter on the trunk of ", &adapter->checkpoint},
        {"soup of ", &*soup}}) {
    auto m = evaluate_cached(a, p, *model);
    if (!m) return m.status();
    print_score(what + l.name, p.name, *m);
  }
  return soup;
}

// What a best-of step starts from: the lineage's trunk, its model of the new
// platform (the trunk: p is not learned yet), each old platform's model, and
// the unmeasured pool's KD inputs.
struct BestOfStart {
  std::string trunk, own;
  std::vector<std::string> old_models;    // each old platform's served model: pinned in the version
  std::vector<std::string> old_teachers;  // the student's old KD targets: old_models, or none (the trunk)
  std::vector<core::Record> unlabeled;
};

// The validation choice's candidates (onboarding/best_of.h), each trained on
// choice.fit and scored on choice.validation; *wall receives their training
// time. The step's timings are added to st.
Result<std::vector<ob::CandidateScore>> score_best_of_candidates(
    const Args& a, const SequencePlatform& p, const std::vector<std::vector<float>>& covered,
    std::span<const core::Record> old_bank, const Lineage& l, const BestOfStart& start, const ob::ChoiceSplit& choice,
    const std::string& digest, double* wall, StepResult* st) {
  const std::string fit = digest + " fit " + fmt("%g", a.choice_fraction);
  auto column = column_cached(a, p, start.own, choice.fit, fit);
  if (!column) return column.status();
  auto student = student_cached(a, p, covered, old_bank, l, start.trunk, l.fisher, *column, choice.fit, start.unlabeled,
                                fit, start.old_teachers);
  if (!student) return student.status();
  auto on_student = adapter_cached(a, p, student->checkpoint, choice.fit, fit);
  if (!on_student) return on_student.status();
  auto on_trunk = adapter_cached(a, p, start.trunk, choice.fit, fit);
  if (!on_trunk) return on_trunk.status();
  std::vector<ob::CandidateScore> scores;
  for (const auto& [c, t] : {std::pair<ob::Candidate, const Trained*>{ob::Candidate::kStudent, &*student},
                             {ob::Candidate::kAdapterOnStudent, &*on_student},
                             {ob::Candidate::kAdapterOnTeacher, &*on_trunk},
                             {ob::Candidate::kFineTune, &*column}}) {
    auto m = tr::evaluate_checkpoint(t->checkpoint, choice.validation, p.platform,
                                     ob::choice_options(a.choice_fraction), a.threads);
    if (!m) return m.status().with_context(std::string(ob::candidate_name(c)));
    scores.push_back({c, *m});
    *wall += t->wall_s;
  }
  for (const auto& [what, t] : {std::pair<std::string, const Trained*>{"choice: column", &*column},
                                {"choice: student", &*student},
                                {"choice: adapters", &*on_student},
                                {"choice: adapters", &*on_trunk}}) {
    st->timings.push_back({l.name, what, t->wall_s, t->cpu_s, t->programs, t->cached});
  }
  return scores;
}

// "  best-of choice on PLATFORM CANDIDATE (...)", the line lineage_summary.py reads.
void print_best_of_choice(const Args& a, const SequencePlatform& p, ob::Candidate chosen,
                          std::span<const ob::CandidateScore> scores, const ob::ChoiceSplit& choice, double wall) {
  std::printf("  best-of choice on %-10s %s (choice %s; validation top-1 on %lld of %lld tasks:", p.name.c_str(),
              std::string(ob::candidate_name(chosen)).c_str(), std::string(ob::choice_name(a.choice)).c_str(),
              static_cast<long long>(scores.empty() ? 0 : choice.validation_tasks),
              static_cast<long long>(choice.validation_tasks + choice.fit_tasks));
  for (const ob::CandidateScore& c : scores) {
    std::printf(" %s %.4f tuning %.4f;", std::string(ob::candidate_name(c.candidate)).c_str(),
                c.validation.top1.mean_ratio, c.validation.tuning.geomean_ratio);
  }
  std::printf(" %.0f s)\n", wall);
}

// --best-of-candidates: the adapters on the parent's trunk and on the
// student, trained on the whole selection, scored on p ("candidate ... of
// LINEAGE" lines; the student's is its "student of" line).
Status score_adapters_of_best_of(const Args& a, const SequencePlatform& p, const Lineage& l, const std::string& trunk,
                                 const std::string& student, const std::vector<core::Record>& records,
                                 const std::string& digest) {
  for (const auto& [c, base] : {std::pair<ob::Candidate, const std::string*>{ob::Candidate::kAdapterOnTeacher, &trunk},
                                {ob::Candidate::kAdapterOnStudent, &student}}) {
    auto t = adapter_cached(a, p, *base, records, digest);
    if (!t) return t.status().with_context(std::string(ob::candidate_name(c)));
    auto score = evaluate_cached(a, p, t->checkpoint);
    if (!score) return score.status().with_context(std::string(ob::candidate_name(c)));
    print_score("candidate " + std::string(ob::candidate_name(c)) + " of " + l.name, p.name, *score);
  }
  return Status::ok();
}

// A best-of lineage's step (e), as a distill job with "method": "best-of"
// makes it (onboarding/best_of.h), on the shared selection: with the
// validation choice, the candidates scored (score_best_of_candidates); then
// the column, the student and the chosen one on the whole selection; the
// lineage's model becomes the student with every old platform's model pinned
// and p's chosen one.
int best_of_step(const Args& a, const SequencePlatform& p, const std::vector<std::string>& covered_names,
                 const std::vector<std::vector<float>>& covered, std::span<const core::Record> old_bank,
                 StepSelections& selections, const std::vector<core::Record>& records, const Selection& shared,
                 Lineage& l, StepResult* st) {
  BestOfStart start;
  auto trunk = tr::platform_checkpoint(l.model, "");
  if (!trunk) return fail(l.name, trunk.status());
  auto own = tr::platform_checkpoint(l.model, p.name);
  if (!own) return fail(l.name, own.status());
  auto old_models = ob::served_models(l.model, covered_names);
  if (!old_models) return fail(l.name, old_models.status());
  start.trunk = std::move(*trunk);
  start.own = std::move(*own);
  start.old_models = std::move(*old_models);
  if (!l.old_kd_from_trunk) start.old_teachers = start.old_models;
  if (l.unlabeled_ratio > 0) start.unlabeled = selections.unlabeled_of(shared);
  const ob::ChoiceSplit choice = ob::choice_split(records, a.choice_fraction);
  std::vector<ob::CandidateScore> scores;
  double choice_wall = 0;
  if (a.choice == ob::Choice::kValidation && !choice.validation.empty()) {
    auto scored = score_best_of_candidates(a, p, covered, old_bank, l, start, choice, shared.digest, &choice_wall, st);
    if (!scored) return fail(l.name, scored.status());
    scores = std::move(*scored);
  }
  const ob::Candidate chosen = ob::chosen_candidate(a.choice, scores);
  print_best_of_choice(a, p, chosen, scores, choice, choice_wall);
  st->choices[l.name] = std::string(ob::candidate_name(chosen));
  const auto timing = [&](const std::string& what, const Trained& t) {
    st->timings.push_back({l.name, what, t.wall_s, t.cpu_s, t.programs, t.cached});
  };

  auto column = column_cached(a, p, start.own, records, shared.digest);
  if (!column) return fail(l.name, column.status());
  auto column_score = evaluate_cached(a, p, column->checkpoint);
  if (!column_score) return fail(l.name, column_score.status());
  print_score("column of " + l.name, p.name, *column_score);
  auto student = student_cached(a, p, covered, old_bank, l, start.trunk, l.fisher, *column, records, start.unlabeled,
                                shared.digest, start.old_teachers);
  if (!student) return fail(l.name, student.status());
  auto student_score = evaluate_cached(a, p, student->checkpoint);
  if (!student_score) return fail(l.name, student_score.status());
  print_score("student of " + l.name, p.name, *student_score);
  timing("column", *column);
  timing("student", *student);
  if (a.best_of_candidates) {
    if (Status s = score_adapters_of_best_of(a, p, l, start.trunk, student->checkpoint, records, shared.digest); !s) {
      return fail(l.name, s);
    }
  }
  if (a.ensembles && a.methods.count("adapter") != 0) {  // score_ensembles needs (d)'s adapter too
    auto on_trunk = adapter_cached(a, p, start.trunk, records, shared.digest);
    if (!on_trunk) return fail(l.name, on_trunk.status());
    l.step_column = column->checkpoint;
    l.step_adapter_on_trunk = on_trunk->checkpoint;
  }
  std::string chosen_model;
  if (chosen == ob::Candidate::kFineTune) {
    chosen_model = column->checkpoint;
  } else if (chosen == ob::Candidate::kSoup) {
    auto soup = soup_model(a, p, l, start.trunk, column->checkpoint, records, shared.digest, st);
    if (!soup) return fail(l.name, soup.status());
    chosen_model = std::move(*soup);
  } else if (chosen != ob::Candidate::kStudent) {
    const bool on_student = chosen == ob::Candidate::kAdapterOnStudent;
    auto t = adapter_cached(a, p, on_student ? student->checkpoint : start.trunk, records, shared.digest);
    if (!t) return fail(l.name, t.status());
    timing("adapter", *t);
    chosen_model = on_student ? t->adapter : t->checkpoint;
  }
  auto composed = ob::compose_best_of({.student = student->checkpoint,
                                       .old_platforms = covered_names,
                                       .old_models = start.old_models,
                                       .platform = p.name,
                                       .chosen = chosen,
                                       .chosen_model = chosen_model});
  if (!composed) return fail(l.name, composed.status());
  l.model = std::move(*composed);
  l.fisher = std::move(student->fisher);
  return 0;
}

// (b) joint: a fresh student on every platform's training data so far (the
// first platform's pool as the base saw it, the rdu selection of each later
// one): the multi-task upper bound at the same measurement budget, free of
// the no-old-data rule.
Result<Trained> train_joint(const Args& a, const std::vector<SequencePlatform>& platforms, std::size_t k,
                            const Selection& shared) {
  const SequencePlatform& p = platforms[k];
  tr::TrainRequest req = make_request(a, p, p.selected, a.base_epochs);
  req.fisher.compute = false;
  std::string key = "joint|" + p.name + "|sel " + shared.digest + "|" + a.platforms[0] + " pool " +
                    std::to_string(platforms[0].split.pool.size()) + " max_records " +
                    std::to_string(a.base_max_records);
  tr::JointTraining joint_platforms;
  joint_platforms.platforms.push_back({platforms[0].split.pool, platforms[0].platform});
  for (std::size_t j = 1; j < k; ++j) {
    joint_platforms.platforms.push_back({platforms[j].selected, platforms[j].platform});
    key += "|" + platforms[j].name + " sel " + platforms[j].selected_digest;
  }
  key += "|epochs " + std::to_string(a.base_epochs) + "|seed " + std::to_string(a.seed);
  req.start = std::move(joint_platforms);
  return train_cached(a, "joint", p.name, key, req);
}

// (c1) and (c2): fresh models of this platform alone, on the shared selection
// or on the whole pool.
int train_separate(const Args& a, const SequencePlatform& p, const std::vector<core::Record>& shared_records,
                   const Selection& shared, StepResult* st, std::map<std::string, Trained>* separate) {
  if (a.methods.count("c1")) {
    tr::TrainRequest req = make_request(a, p, shared_records, a.epochs);
    req.fisher.compute = false;
    const std::string key = "fresh|" + p.name + "|sel " + shared.digest + "|epochs " + std::to_string(a.epochs) +
                            "|seed " + std::to_string(a.seed);
    auto t = train_cached(a, "c1", p.name, key, req);
    if (!t) return fail(kC1, t.status());
    st->timings.push_back({kC1, "train", t->wall_s, t->cpu_s, t->programs, t->cached});
    (*separate)[kC1] = std::move(*t);
  }
  if (a.methods.count("c2")) {
    tr::TrainRequest req = make_request(a, p, p.split.pool, a.epochs);
    req.fisher.compute = false;
    const std::string key = "fresh|" + p.name + "|whole pool " + std::to_string(p.split.pool.size()) + "|max_records " +
                            std::to_string(a.base_max_records) + "|epochs " + std::to_string(a.epochs) + "|seed " +
                            std::to_string(a.seed);
    auto t = train_cached(a, "c2", p.name, key, req);
    if (!t) return fail(kC2, t.status());
    st->timings.push_back({kC2, "train", t->wall_s, t->cpu_s, t->programs, t->cached});
    (*separate)[kC2] = std::move(*t);
  }
  return 0;
}

// Scores of step k's models on every platform seen so far (the separate
// models on this platform only; earlier cells carried from `previous`).
int score_step(const Args& a, std::vector<SequencePlatform>& platforms, std::size_t k,
               const std::vector<Lineage>& lineages, const std::optional<Trained>& joint_model,
               const std::map<std::string, Trained>& separate, const StepResult& previous, StepResult* st) {
  const SequencePlatform& p = platforms[k];
  for (const Lineage& l : lineages) {
    auto cm = tr::CostModel::load_for_platform(l.model, "");  // (d): the trunk's count
    if (!cm) return fail(l.name, cm.status());
    const std::int64_t params = (*cm)->num_parameters();
    for (std::size_t j = 0; j <= k; ++j) {
      auto own = tr::platform_checkpoint(l.model, platforms[j].name);  // (d): the platform's adapter folded in
      if (!own) return fail(l.name, own.status());
      auto s = evaluate_cached(a, platforms[j], *own);
      if (!s) return fail(l.name, s.status());
      st->cells[l.name][platforms[j].name] = {*s, params};
      print_score(l.name, platforms[j].name, *s, params);
      if (!st->floors.count(platforms[j].name)) st->floors[platforms[j].name] = floor_of(*s);
    }
  }
  if (joint_model) {
    auto cm = tr::CostModel::load(joint_model->checkpoint);
    if (!cm) return fail(kJoint, cm.status());
    for (std::size_t j = 0; j <= k; ++j) {
      auto s = evaluate_cached(a, platforms[j], joint_model->checkpoint);
      if (!s) return fail(kJoint, s.status());
      st->cells[kJoint][platforms[j].name] = {*s, (*cm)->num_parameters()};
      print_score(kJoint, platforms[j].name, *s);
    }
  }
  for (const auto& [name, t] : separate) {
    auto s = evaluate_cached(a, p, t.checkpoint);
    if (!s) return fail(name, s.status());
    if (auto it = previous.cells.find(name); it != previous.cells.end()) {
      st->cells[name] = it->second;  // the earlier platforms' own models
    }
    st->cells[name][p.name] = {*s, t.params};
    print_score(name, p.name, *s, t.params);
  }
  std::fflush(stdout);
  return 0;
}

// The held-out programs evaluate_cached scores on `p`, scored by each of
// `members` (one score vector per member, in order).
Result<tr::ScoredPrograms> score_held_out(const Args& a, const SequencePlatform& p,
                                          const std::vector<std::string_view>& members) {
  const ScoredSplit scored = scored_split(a);
  std::vector<core::Record> held_out;
  for (const core::Record& r : p.split.holdout) {
    if (core::in_holdout(core::canonical_workload_key(r.workload_key), scored.fraction, scored.salt))
      held_out.push_back(r);
  }
  tr::DatasetOptions o;
  o.max_records = kMaxEvalRecords;
  o.descriptor_extra = platform_slot(a, p.name);
  return tr::score_checkpoints(members, held_out, p.platform, o, a.threads);
}

// evaluate_cached's figures for one score per program of `programs`.
Score score_of(const tr::ScoredPrograms& programs, const std::vector<float>& scores) {
  return score_from(tr::evaluate_ranking(programs.groups, programs.latencies, scores));
}

// The mean of the chosen members' scores, each standardized over the scored
// programs (its mean and standard deviation), so that no member's scale
// outweighs another's.
std::vector<float> standardized_mean(const tr::ScoredPrograms& programs, const std::vector<std::size_t>& which) {
  std::vector<float> out(programs.latencies.size(), 0.0F);
  for (std::size_t i : which) {
    const std::vector<float>& x = programs.scores[i];
    double mean = 0, sq = 0;
    for (float v : x) mean += v;
    mean /= static_cast<double>(x.size());
    for (float v : x) sq += (v - mean) * (v - mean);
    const double sd = std::sqrt(sq / static_cast<double>(x.size())) + 1e-12;
    for (std::size_t j = 0; j < x.size(); ++j) {  // rounded as the ensemble lines were before (float, then / count)
      const auto z = static_cast<float>((x[j] - mean) / sd);
      out[j] += z / static_cast<float>(which.size());
    }
  }
  return out;
}

// The learned platform (0..k) whose hardware descriptor is nearest `target`'s
// (Euclidean over encode_hardware's slots, each about [0, 1]: a different
// target kind is far, so a GPU's nearest is a GPU when one was learned).
std::size_t nearest_learned(const std::vector<SequencePlatform>& platforms, std::size_t k,
                            const SequencePlatform& target) {
  std::size_t best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i <= k; ++i) {
    double d = 0;
    for (int x = 0; x < core::kHardwareDim; ++x) {
      const double diff =
          platforms[i].descriptor[static_cast<std::size_t>(x)] - target.descriptor[static_cast<std::size_t>(x)];
      d += diff * diff;
    }
    if (d < best_d) {
      best = i;
      best_d = d;
    }
  }
  return best;
}

// --zero-shot-candidates (issue 48 item 2: a lever measured before it is
// built): besides the trunk, two other models a lineage with a model per
// platform could serve a platform it has not learned: the nearest learned
// platform's model (nearest_learned), and the standardized mean of the
// models of every learned platform of its target kind (the trunk when there
// is none). Lines "  zero-shot nearest LINEAGE on ..." and "  zero-shot
// same-kind mean LINEAGE on ...".
Status score_zero_shot_candidates(const Args& a, const std::vector<SequencePlatform>& platforms, std::size_t k,
                                  const Lineage& l, const SequencePlatform& target) {
  std::vector<std::string> same_kind;  // the model of every learned platform of target's kind
  for (std::size_t i = 0; i <= k; ++i) {
    if (!core::same_target_kind(platforms[i].descriptor, target.descriptor)) continue;
    auto own = tr::platform_checkpoint(l.model, platforms[i].name);
    if (!own) return own.status();
    same_kind.push_back(std::move(*own));
  }
  const std::size_t of_kind = same_kind.size();
  if (same_kind.empty()) {  // none of its kind: the trunk
    auto trunk = tr::platform_checkpoint(l.model, "");
    if (!trunk) return trunk.status();
    same_kind.push_back(std::move(*trunk));
  }
  const std::string& nearest_name = platforms[nearest_learned(platforms, k, target)].name;
  auto nearest = tr::platform_checkpoint(l.model, nearest_name);
  if (!nearest) return nearest.status();
  auto nearest_score = evaluate_cached(a, target, *nearest);
  if (!nearest_score) return nearest_score.status();
  print_score("zero-shot nearest " + l.name, target.name, *nearest_score);
  std::printf("  (the learned platform nearest %s: %s; %zu of its kind)\n", target.name.c_str(), nearest_name.c_str(),
              of_kind);
  const std::vector<std::string_view> members(same_kind.begin(), same_kind.end());
  auto programs = score_held_out(a, target, members);
  if (!programs) return programs.status();
  std::vector<std::size_t> all(members.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  print_score("zero-shot same-kind mean " + l.name, target.name,
              score_of(*programs, standardized_mean(*programs, all)));
  return Status::ok();
}

// Forward transfer (issue 48 item 2): each lineage's model for a platform it
// has not learned (the trunk: platform_checkpoint of an unknown name) scored
// zero-shot on every platform after step k, already loaded (its held-out
// split: main preloads them). Lines "  zero-shot LINEAGE on PLATFORM ...";
// with --zero-shot-candidates, score_zero_shot_candidates' lines for each
// lineage with a model per platform.
int score_zero_shot(const Args& a, const std::vector<SequencePlatform>& platforms, std::size_t k,
                    const std::vector<Lineage>& lineages, StepResult* st) {
  if (a.no_zero_shot) return 0;
  for (const Lineage& l : lineages) {
    for (std::size_t j = k + 1; j < platforms.size(); ++j) {
      auto own = tr::platform_checkpoint(l.model, platforms[j].name);
      if (!own) return fail(l.name, own.status());
      auto s = evaluate_cached(a, platforms[j], *own);
      if (!s) return fail(l.name, s.status());
      st->zero_shot[l.name][platforms[j].name] = *s;
      print_score("zero-shot " + l.name, platforms[j].name, *s);
      if (a.zero_shot_candidates && (l.adapter || l.best_of)) {
        if (Status c = score_zero_shot_candidates(a, platforms, k, l, platforms[j]); !c) return fail(l.name, c);
      }
    }
  }
  std::fflush(stdout);
  return 0;
}

// --ensembles (issue 48: a lever measured before it is built): the new
// platform served by the standardized mean of several models' scores (a
// served ensemble would take each member's mean and deviation from the
// selection), on the programs evaluate_cached scores. Members: (d)'s adapter
// on the first trunk, and (e)'s fine-tune and adapter on its parent's trunk
// (the latest student). Lines "  ensemble of ... on PLATFORM ...", and each
// member rescored on the same programs ("  member ..."), which should match
// its line above.
int score_ensembles(const Args& a, const SequencePlatform& p, const std::vector<Lineage>& lineages) {
  if (!a.ensembles) return 0;
  const Lineage* adapter = nullptr;
  const Lineage* best_of = nullptr;
  for (const Lineage& l : lineages) {
    if (l.adapter) adapter = &l;
    if (l.best_of && !l.old_kd_from_trunk) best_of = &l;  // (e), not (f)
  }
  if (adapter == nullptr || best_of == nullptr || best_of->step_column.empty()) return 0;
  auto first = tr::platform_checkpoint(adapter->model, p.name);
  if (!first) return fail(adapter->name, first.status());
  const std::vector<std::string_view> members = {*first, best_of->step_column, best_of->step_adapter_on_trunk};
  const std::vector<std::string> member_names = {"adapter", "fine-tune", "adapter on the student"};
  auto programs = score_held_out(a, p, members);
  if (!programs) return fail("ensembles", programs.status());
  for (std::size_t i = 0; i < members.size(); ++i) {
    print_score("member " + member_names[i], p.name, score_of(*programs, programs->scores[i]));
  }
  print_score("ensemble of adapter and fine-tune", p.name, score_of(*programs, standardized_mean(*programs, {0, 1})));
  print_score("ensemble of student adapter and fine-tune", p.name,
              score_of(*programs, standardized_mean(*programs, {2, 1})));
  print_score("ensemble of both adapters and fine-tune", p.name,
              score_of(*programs, standardized_mean(*programs, {0, 1, 2})));
  print_score("ensemble of both adapters", p.name, score_of(*programs, standardized_mean(*programs, {0, 2})));
  std::fflush(stdout);
  return 0;
}

// Step k ≥ 1: onboard platforms[k] into every row, then score. Returns the
// process exit code (0 = go on).
int run_step(const Args& a, std::vector<SequencePlatform>& platforms, std::size_t k, std::vector<Lineage>& lineages,
             const StepResult& previous, StepResult* st) {
  SequencePlatform& p = platforms[k];
  if (!load_platform(a, a.platforms[k], true, &p)) return 1;
  keep_bank(a, &p);
  std::vector<std::vector<float>> covered;
  std::vector<core::Record> old_bank;
  for (std::size_t j = 0; j < k; ++j) {
    covered.push_back(platforms[j].descriptor);
    old_bank.insert(old_bank.end(), platforms[j].bank.begin(), platforms[j].bank.end());
  }
  st->platform = p.name;
  st->pool = static_cast<std::int64_t>(p.split.pool.size());
  StepSelections selections(a, p, covered);
  auto shared = selections.of(lineages.front().model);
  if (!shared) return fail("selection", shared.status());
  const std::vector<core::Record> shared_records = selections.records_of(**shared);
  p.selected = shared_records;
  p.selected_digest = (*shared)->digest;
  st->selected = static_cast<std::int64_t>(shared_records.size());
  st->embed_s = (*shared)->embed_s;
  st->select_s = (*shared)->select_s;

  const std::vector<std::string> covered_names(a.platforms.begin(), a.platforms.begin() + static_cast<long>(k));
  for (Lineage& l : lineages) {
    const int rc =
        l.distill   ? distill_step(a, p, covered, old_bank, selections, l, st)
        : l.adapter ? adapter_step(a, p, shared_records, **shared, l, st)
        : l.best_of ? best_of_step(a, p, covered_names, covered, old_bank, selections, shared_records, **shared, l, st)
                    : fine_tune_step(a, p, shared_records, **shared, l, st);
    if (rc != 0) return rc;
  }
  std::optional<Trained> joint_model;
  if (a.methods.count("b")) {
    auto t = train_joint(a, platforms, k, **shared);
    if (!t) return fail(kJoint, t.status());
    st->timings.push_back({kJoint, "train", t->wall_s, t->cpu_s, t->programs, t->cached});
    joint_model = std::move(*t);
  }
  std::map<std::string, Trained> separate;
  if (const int rc = train_separate(a, p, shared_records, **shared, st, &separate); rc != 0) return rc;
  if (const int rc = score_step(a, platforms, k, lineages, joint_model, separate, previous, st); rc != 0) return rc;
  if (const int rc = score_zero_shot(a, platforms, k, lineages, st); rc != 0) return rc;
  if (const int rc = score_ensembles(a, p, lineages); rc != 0) return rc;
  p.split.pool = {};  // selections are done; only the eval split (and the selection, for (b)) is needed from now on
  p.split.task = {};
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse_args(argc, argv, &a)) return 2;
  const Clock::time_point t_start = Clock::now();
  std::filesystem::create_directories(a.cache);
  // RESULTS.md is rewritten after every step, so a run its budget stops keeps
  // the steps it finished (stdout gets the tables only at the end).
  std::filesystem::create_directories(a.out);
  std::printf("# %s\n", a.command.c_str());
  // The main distill lineage's settings as resolved (defaults included), so
  // that scripts/gpu/continual_steps.py names it right whatever the defaults were.
  std::printf(
      "# settings: old_weight %g, ewc %g, epochs %d, column_epochs %d, unlabeled_ratio %g, old_bank %lld, "
      "validation %g, platform_slots %d, split_salt %llu, column_weight %g%s, old_weight_other_kind %g, "
      "student_from_column %d, old_bank_ratio %g, feature_weight %g, student_lr %g, teacher_mix %g, "
      "old_weight_same_kind %g\n",
      a.old_weight, a.ewc, a.epochs, a.column_epochs, a.unlabeled_ratio, static_cast<long long>(a.old_bank),
      a.validation, a.platform_slots ? 1 : 0, static_cast<unsigned long long>(a.split_salt), a.column_weight,
      a.column_weight_constant ? "" : " per old platform", a.old_weight_other_kind, a.student_from_column ? 1 : 0,
      a.old_bank_ratio, a.feature_weight, a.student_lr, a.teacher_mix, a.old_weight_same_kind);
  std::fflush(stdout);

  std::vector<Lineage> lineages = make_lineages(a);
  const std::vector<std::string> order = row_order(a, lineages);
  std::vector<SequencePlatform> platforms(a.platforms.size());
  // Forward transfer scores every later platform's held-out split from step 0 on.
  for (std::size_t k = 1; k < a.platforms.size() && !a.no_zero_shot; ++k) {
    if (!load_platform(a, a.platforms[k], false, &platforms[k])) return 1;
  }
  std::vector<StepResult> steps;
  for (std::size_t k = 0; k < a.platforms.size(); ++k) {
    StepResult st;
    const int rc =
        k == 0 ? run_base_step(a, platforms[0], lineages, &st) : run_step(a, platforms, k, lineages, steps.back(), &st);
    if (rc != 0) return rc;
    if (k == 0) {
      if (const int zrc = score_zero_shot(a, platforms, 0, lineages, &st); zrc != 0) return zrc;
    }
    steps.push_back(std::move(st));
    if (!write_file_atomic(a.out + "/RESULTS.md", render(a, steps, order, seconds_since(t_start)))) {
      std::fprintf(stderr, "cannot write %s/RESULTS.md\n", a.out.c_str());
    }
  }
  const std::string md = render(a, steps, order, seconds_since(t_start));
  std::printf("\n%s", md.c_str());
  return write_file_atomic(a.out + "/RESULTS.md", md) ? 0 : 1;
}
