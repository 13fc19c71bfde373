// bench_train — tcld's default training jobs without a database (issue 19
// item 2): the call a job makes (trainer::train_platform, onboarding/jobs.h) with the options of a job that sets none
// (onboarding::JobOptions, onboarding::train_request), on records files, on the CPU or on CUDA. Prints wall
// times and the evaluation split's top-1.
//
//   bench_train --data DIR|FILE [--device auto|cpu|cuda] [--threads T] [--time-budget S] [--seed N] [--out DIR]
//       A train job on one platform's records: TrainRequest's defaults (10%
//       of tasks held out, at most 100k training programs on the CPU and
//       every one on CUDA (trainer::default_max_records), 20k evaluation
//       programs, 3 epochs, a 600 s budget, seed 0). Writes DIR/checkpoint
//       and DIR/fisher: the production version a distill starts from.
//   bench_train --distill --data DIR|FILE --teacher DIR --teacher-data DIR|FILE[,...]
//               [--device ...] [--threads T] [--old-bank-ratio R] [--feature-weight W] [--student-lr LR]
//               [--teacher-mix M] [--old-weight W] [--ewc E] [--column-weight C]
//               [--old-weight-on-new F] [--target T] [--hardware-params N,...(8)]
//               [--adapter-rank R[,R...]] [--adapter-layers blocks|all] [--adapter-lr LR] [--adapter-epochs N]
//               [--column-only] [--split-salt N] [--out DIR]
//       A distill job into the platform of --data, from the checkpoint and
//       Fisher in --teacher, trained on the platforms of --teacher-data
//       (their descriptors are the old platforms'): the active column
//       (init = teacher, kDistillColumnEpochs, no Fisher, as the worker makes one
//       when the platform has none), then the student (init = teacher, kDistillStudentEpochs,
//       onboarding::plan_distillation of DistillTargets' defaults: KD from
//       the column (its weight per old platform) and from the teacher
//       under every old descriptor, EWC from the teacher's Fisher), then, as
//       the worker does, student and teacher on every covered platform's
//       evaluation split (evaluate_checkpoint, on the CPU). --out DIR: the
//       student's checkpoint and Fisher (for bench_gate). A records file
//       holds measurements only, so the unmeasured pool that the worker reads
//       from the registry as KD-only inputs is empty here. The old platforms'
//       bank: every k-th successful measurement of each --teacher-data file,
//       costs dropped, an equal share of max_old_bank each (the worker takes
//       a share by program id and keeps each program once; --old-bank-ratio,
//       default the job's, 0 = none). --feature-weight W: the feature term
//       on the bank (DistillLevers::feature_weight; default the job's).
//       --student-lr LR: the student's peak learning rate (default the job's,
//       trainer::kDistillStudentLearningRate; the column keeps fine-tuning's).
//       --teacher-mix M: the student mixed back with the teacher in weight
//       space after training (DistillLevers::teacher_mix; default the job's).
//       --old-weight W, --ewc E, --column-weight C: the old platforms' KD
//       weight, EWC's and the column's per old platform (DistillTargets::
//       old_weight, ewc_weight, the job's column_weight; default the job's).
//       --old-weight-on-new F: every old platform's KD on the new platform's
//       own programs at F x its weight (DistillLevers::old_weight_on_new_programs;
//       0 = the old terms read the bank only, none without a bank; default
//       1, the job's).
//       --target / --hardware-params: the platform of --data registered with
//       those facts instead of its records' (as a train job or distill job on a
//       platform registered so; its descriptor follows).
//       --adapter-rank R: after the column, the same fine-tune through a
//       rank-R adapter on the teacher, every other weight frozen (FineTune::
//       adapter, trainer/adapter.h), printed as "adapter rR LAYERS"; one run
//       per rank listed. --adapter-layers: blocks (default: the Mamba blocks'
//       in_proj and out_proj) or all (every Dense layer). --adapter-lr: its
//       peak learning rate (default fine-tuning's). --adapter-epochs N: its
//       epochs (default the column's, kDistillColumnEpochs). --column-only: stop
//       after the column and the adapters (no student, no comparison).
//       --split-salt N: the new platform's evaluation split drawn with salt N
//       (DatasetOptions::split_salt; default the job's).
//
// --time-budget S: every training run's budget in seconds (the job option
// time_budget_s; default the job's, 0 = none, so every planned epoch runs).
// --seed N: every training run's seed (the job option seed; default 0).
//
// The worker reads a deterministic share of a large platform's records
// (about 1.25x what the caps keep) where this reads the whole file; the
// caps keep 100k training programs either way.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/features.h"
#include "core/files.h"
#include "core/line_reader.h"
#include "core/program_id.h"
#include "core/record.h"
#include "core/task_split.h"
#include "bench/lib/device_arg.h"
#include "bench/lib/timing.h"
#include "bench/lib/distill_levers.h"
#include "bench/lib/flags.h"
#include "bench/lib/platform_data.h"
#include "bench/lib/records.h"
#include "onboarding/distill.h"
#include "onboarding/job_options.h"
#include "onboarding/platform_data.h"
#include "trainer/device.h"
#include "trainer/train_job.h"

namespace {

namespace core = tcl::core;
namespace tr = tcl::trainer;
namespace onboarding = tcl::onboarding;
using Clock = std::chrono::steady_clock;
using tcl::bench::seconds_since;

struct Args {
  std::string data;
  bool distill = false;
  std::string teacher;                    // directory with checkpoint and fisher
  std::vector<std::string> teacher_data;  // the teacher's platforms
  tr::Device device = tr::Device::kAuto;
  int threads = 0;
  std::string out;
  double old_bank_ratio = tr::DistillTargets{}.old_bank_ratio;
  double feature_weight = tr::DistillLevers{}.feature_weight;
  double student_lr = tr::kDistillStudentLearningRate;
  double teacher_mix = tr::DistillLevers{}.teacher_mix;
  double old_weight = tr::DistillTargets{}.old_weight;
  double ewc = tr::DistillTargets{}.ewc_weight;
  double column_weight = tr::DistillTargets{}.column_weight;  // per old platform, as the job's option
  double old_weight_on_new = 1;
  std::string target_override;            // --target
  std::vector<double> hardware_override;  // --hardware-params, integers read as numbers
  double time_budget_s = tr::TrainRequest{}.resources.time_budget_s;
  std::uint64_t seed = tr::Optimisation{}.seed;
  std::vector<int> adapter_ranks;  // --adapter-rank R[,R...]: an adapter fine-tune per rank
  tr::AdapterLayers adapter_layers = tr::AdapterLayers::kBlocks;
  double adapter_lr = tr::Optimisation{}.learning_rate;
  int adapter_epochs = tr::kDistillColumnEpochs;
  bool column_only = false;  // --column-only: no student, no comparison
  std::uint64_t split_salt = tr::TrainRequest::default_data_options().split_salt;
};

bool parse_args(int argc, char** argv, Args* a) {
  tcl::bench::Flags flags;
  flags.flag("distill", &a->distill)
      .value("data", &a->data)
      .value("teacher", &a->teacher)
      .custom("teacher-data",
              [a](const std::string& v) {
                const auto items = tcl::bench::split_list(v);
                a->teacher_data.insert(a->teacher_data.end(), items.begin(), items.end());
                return true;
              })
      .custom("device", tcl::bench::device_arg(&a->device))
      .value("threads", &a->threads)
      .value("old-bank-ratio", &a->old_bank_ratio)
      .value("feature-weight", &a->feature_weight)
      .value("student-lr", &a->student_lr)
      .value("teacher-mix", &a->teacher_mix)
      .value("old-weight", &a->old_weight)
      .value("ewc", &a->ewc)
      .value("column-weight", &a->column_weight)
      .value("old-weight-on-new", &a->old_weight_on_new)
      .value("target", &a->target_override)
      .list("hardware-params", &a->hardware_override)
      .custom("adapter-rank",
              [a](const std::string& v) {
                for (const std::string& item : tcl::bench::split_list(v)) {
                  char* end = nullptr;
                  const long r = std::strtol(item.c_str(), &end, 10);
                  if (end == item.c_str() || *end != '\0' || r < 1 || r > tr::kMaxAdapterRank) return false;
                  a->adapter_ranks.push_back(static_cast<int>(r));
                }
                return !a->adapter_ranks.empty();
              })
      .custom("adapter-layers",
              [a](const std::string& v) {
                const auto layers = tr::parse_adapter_layers(v);
                if (layers) a->adapter_layers = *layers;
                return layers.has_value();
              })
      .value("adapter-lr", &a->adapter_lr)
      .value("adapter-epochs", &a->adapter_epochs)
      .flag("column-only", &a->column_only)
      .value("split-salt", &a->split_salt)
      .value("time-budget", &a->time_budget_s)
      .value("seed", &a->seed)
      .value("out", &a->out);
  if (!flags.parse(argc, argv)) return false;
  const auto weight = [](double w) { return w >= 0 && std::isfinite(w); };
  if (!weight(a->old_weight) || !weight(a->ewc) || !weight(a->column_weight) || !weight(a->old_weight_on_new) ||
      !weight(a->feature_weight) || !weight(a->old_bank_ratio) || !(a->teacher_mix >= 0 && a->teacher_mix <= 1) ||
      !(a->student_lr >= 1e-6 && a->student_lr <= 1) || !(a->adapter_lr >= 1e-6 && a->adapter_lr <= 1) ||
      a->adapter_epochs < 1 || a->adapter_epochs > 1000) {
    std::fprintf(stderr, "bad weights, --teacher-mix (0..1), --student-lr, --adapter-lr or --adapter-epochs\n");
    return false;
  }
  if (!tcl::bench::check_hardware_arg(a->hardware_override)) return false;
  if (!a->distill && (!a->adapter_ranks.empty() || a->column_only)) {
    std::fprintf(stderr, "--adapter-rank and --column-only go with --distill\n");
    return false;
  }
  if (a->data.empty() || (a->distill && (a->teacher.empty() || a->teacher_data.empty()))) {
    std::fprintf(stderr,
                 "usage: bench_train --data DIR|FILE [--device auto|cpu|cuda] [--threads T] [--out DIR]\n"
                 "       bench_train --distill --data DIR|FILE --teacher DIR --teacher-data DIR|FILE[,...] ...\n");
    return false;
  }
  return true;
}

// The records of a file (DIR means DIR/records.jsonl.gz) that `keep` accepts.
bool load_records(std::string path, std::vector<core::Record>* out,
                  const std::function<bool(const core::Record&)>& keep = {}) {
  if (std::filesystem::is_directory(path)) path += "/records.jsonl.gz";
  return tcl::bench::load_records(path, out, 0, keep);
}

std::string read_file(const std::string& path) {
  std::string bytes;
  return tcl::core::read_file(path, &bytes) ? bytes : std::string();
}

void print_result(const char* what, const tr::TrainResult& r) {
  const tr::RankingMetrics& m = r.metrics;
  std::printf(
      "%s: device %s; train %lld tasks / %lld programs, eval %lld tasks / %lld programs; "
      "%d of %d epochs, %lld steps%s\n",
      what, std::string(tr::device_name(r.device)).c_str(), static_cast<long long>(r.data.train_tasks),
      static_cast<long long>(r.data.train_records), static_cast<long long>(r.data.eval_tasks),
      static_cast<long long>(r.data.eval_records), r.epochs_done, r.epochs_planned, static_cast<long long>(r.steps),
      r.budget_exhausted ? " (budget hit)" : "");
  std::printf(
      "%s: wall %.1f s (dataset %.1f, train %.1f, eval %.1f, fisher %.1f); eval top-1 %.4f mean / %.4f sum, "
      "top-5 %.4f mean, pairwise %.4f, tuning proxy %.4f (floor top-1 %.4f mean, tuning %.4f); epoch losses",
      what, r.wall_s, r.dataset_s, r.train_s, r.eval_s, r.fisher_s, m.top1.mean_ratio, m.top1.sum_ratio,
      m.top5.mean_ratio, m.pairwise_accuracy, m.tuning.geomean_ratio, m.random_top1.mean_ratio,
      m.random_tuning.geomean_ratio);
  for (double l : r.epoch_losses) std::printf(" %.4f", l);
  std::printf("\n");
  std::fflush(stdout);
}

tr::ProgressCallback progress_printer(const char* what, Clock::time_point t0) {
  return [what, t0](int epoch, int epochs, double loss, double val_top1) {
    std::printf("  %s epoch %d/%d loss %.4f val top-1 %.4f (%.1f s)\n", what, epoch, epochs, loss, val_top1,
                seconds_since(t0));
    std::fflush(stdout);
    return true;
  };
}

// A job's request from default options (onboarding::train_request), with
// the flags' budget, seed and split salt, on the flags' device and threads.
tr::TrainRequest default_request(const Args& a, const std::vector<core::Record>& records,
                                 const tr::Platform& platform) {
  onboarding::JobOptions o;
  o.time_budget_s = a.time_budget_s;
  o.seed = a.seed;
  if (auto device = tr::resolve_device(a.device); device) {
    o.max_records = onboarding::effective_max_records(o, *device);  // as a job's
  } else {
    o.max_records = tr::TrainRequest::default_data_options().max_records;
  }
  tr::TrainRequest r = onboarding::train_request(o, platform, records);
  r.resources.device = a.device;
  r.resources.threads = a.threads;
  r.data.options.split_salt = a.split_salt;
  return r;
}

// --out DIR: the model's checkpoint and fisher as DIR/checkpoint and
// DIR/fisher (nothing when `out` is empty). False, with a message, when
// they cannot be written.
bool write_model(const std::string& out, const tr::TrainResult& r) {
  if (out.empty()) return true;
  std::filesystem::create_directories(out);
  if (!tcl::core::write_file_atomic(out + "/checkpoint", r.checkpoint) ||
      !tcl::core::write_file_atomic(out + "/fisher", r.fisher)) {
    std::fprintf(stderr, "cannot write %s/checkpoint and fisher\n", out.c_str());
    return false;
  }
  return true;
}

int run_train(const Args& a, const std::vector<core::Record>& records, const tr::Platform& platform) {
  const Clock::time_point t0 = Clock::now();
  auto trained = tr::train_platform(default_request(a, records, platform), progress_printer("train", t0));
  if (!trained) {
    std::fprintf(stderr, "train: %s\n", trained.status().to_string().c_str());
    return 1;
  }
  print_result("train", *trained);
  return write_model(a.out, *trained) ? 0 : 1;
}

// The old platforms' bank: each file's successful measurements, every k-th
// up to an equal share of max_old_bank, every cost dropped. (Each file is
// read a second time here, after its evaluation split: a bench's cost.)
bool read_old_bank(const Args& a, std::int64_t max_records, std::vector<core::Record>* bank) {
  const std::size_t share = static_cast<std::size_t>(max_records) / a.teacher_data.size();
  for (const std::string& path : a.teacher_data) {
    std::vector<core::Record> all;
    if (!load_records(path, &all, [](const core::Record& r) { return !core::measurement_failed(r.error_no, r.costs); }))
      return false;
    const std::size_t step = std::max<std::size_t>(1, (all.size() + share - 1) / std::max<std::size_t>(share, 1));
    for (std::size_t i = 0; i < all.size(); i += step) {
      bank->push_back(std::move(all[i]));
      bank->back().costs.clear();
      bank->back().all_cost = 0;
    }
  }
  return true;
}

// --adapter-rank: the column's fine-tune through a per-platform adapter on
// the teacher (trainer/adapter.h), one run per rank: what the new platform
// gets when the teacher's own weights stay as they are.
bool run_adapters(const Args& a, const std::vector<core::Record>& records, const tr::Platform& platform,
                  const std::string& teacher) {
  for (int rank : a.adapter_ranks) {
    tr::FineTune tune{.init_checkpoint = teacher};
    tune.adapter = {.rank = rank, .layers = a.adapter_layers};
    tr::TrainRequest request =
        onboarding::column_request(default_request(a, records, platform), tune, a.adapter_epochs);
    request.optimisation.learning_rate = a.adapter_lr;
    const std::string what =
        "adapter r" + std::to_string(rank) + " " + std::string(tr::adapter_layers_name(a.adapter_layers));
    const Clock::time_point t0 = Clock::now();
    auto tuned = tr::train_platform(request, progress_printer(what.c_str(), t0));
    if (!tuned) {
      std::fprintf(stderr, "%s: %s\n", what.c_str(), tuned.status().to_string().c_str());
      return false;
    }
    print_result(what.c_str(), *tuned);
    std::printf("%s: %lld parameters trained (learning rate %g, %d epochs), the model's %lld frozen\n", what.c_str(),
                static_cast<long long>(tuned->adapter_parameters), a.adapter_lr, a.adapter_epochs,
                static_cast<long long>(tuned->num_parameters));
  }
  return true;
}

// The old platforms (--teacher-data), as the worker reads them for its
// comparison: each one's platform and descriptor, and the records of its
// evaluation split only.
struct OldPlatforms {
  std::vector<tr::Platform> platforms;
  std::vector<std::vector<float>> descriptors;
  std::vector<std::vector<core::Record>> eval;
};

bool read_old_platforms(const Args& a, const tr::DatasetOptions& split, OldPlatforms* out) {
  out->eval.resize(a.teacher_data.size());
  for (std::size_t i = 0; i < a.teacher_data.size(); ++i) {
    tr::Platform p;
    bool found = false;
    const auto keep = [&](const core::Record& r) {
      if (!found && !r.target.empty()) {
        p = tr::Platform{r.target, r.hardware_params};
        found = true;
      }
      return core::in_holdout(core::canonical_workload_key(r.workload_key), split.eval_fraction, split.split_salt);
    };
    if (!load_records(a.teacher_data[i], &out->eval[i], keep) || !found) return false;
    std::vector<float> h(core::kHardwareDim);
    core::encode_hardware(p.hardware, p.target, h.data());
    out->descriptors.push_back(std::move(h));
    out->platforms.push_back(p);
  }
  return true;
}

// The distill job's weights (its defaults) with the flags'.
tr::DistillTargets distill_weights(const Args& a) {
  tr::DistillTargets weights;
  weights.old_bank_ratio = a.old_bank_ratio;
  weights.old_weight = a.old_weight;
  weights.ewc_weight = a.ewc;
  weights.column_weight = a.column_weight;
  return weights;
}

// The student's request, with the worker's plan (onboarding/distill.h) over
// `sources` and the bench's levers (bench/lib/distill_levers.h): one factor
// for every old platform, whatever its kind (empty at 1, as the job).
tr::TrainRequest student_request(const Args& a, const std::vector<core::Record>& records, const tr::Platform& platform,
                                 const std::string& teacher, onboarding::DistillSources sources) {
  tr::TrainRequest request = default_request(a, records, platform);
  request.optimisation.epochs = tr::kDistillStudentEpochs;
  request.optimisation.learning_rate = a.student_lr;
  tr::DistillTargets targets = onboarding::plan_distillation(distill_weights(a), std::move(sources));
  tr::DistillLevers levers;
  levers.feature_weight = a.feature_weight;
  levers.teacher_mix = a.teacher_mix;
  levers.old_weight_on_new_programs = tcl::bench::old_weight_on_new_programs(
      onboarding::descriptor_vector(platform), targets.old_descriptors, a.old_weight_on_new, a.old_weight_on_new);
  request.start = tr::Distill{.teacher = {.init_checkpoint = teacher}, .targets = targets, .levers = levers};
  return request;
}

// Every covered platform (the old ones, then the new one): student against
// teacher on its evaluation split. False, with a message, when one fails.
bool compare_with_teacher(const Args& a, const std::vector<core::Record>& records, const tr::Platform& platform,
                          const OldPlatforms& old, const std::string& student, const std::string& teacher) {
  const tr::DatasetOptions split = tr::TrainRequest::default_data_options();
  for (std::size_t i = 0; i <= old.platforms.size(); ++i) {
    const bool fresh = i == old.platforms.size();
    const std::vector<core::Record>& recs = fresh ? records : old.eval[i];
    const tr::Platform& p = fresh ? platform : old.platforms[i];
    const char* name = fresh ? a.data.c_str() : a.teacher_data[i].c_str();
    tr::DatasetOptions judged = split;
    if (fresh) judged.split_salt = a.split_salt;  // the tasks the distill held out (--split-salt)
    auto s = tr::evaluate_checkpoint(student, recs, p, judged, a.threads);
    auto t = tr::evaluate_checkpoint(teacher, recs, p, judged, a.threads);
    if (!s || !t) {
      std::fprintf(stderr, "evaluate %s: %s\n", name, (!s ? s.status() : t.status()).to_string().c_str());
      return false;
    }
    std::printf(
        "evaluate %s: student top-1 %.4f, teacher %.4f (change %+.4f); tuning proxy student %.4f, teacher %.4f "
        "(random order %.4f)\n",
        name, s->top1.mean_ratio, t->top1.mean_ratio, s->top1.mean_ratio - t->top1.mean_ratio, s->tuning.geomean_ratio,
        t->tuning.geomean_ratio, s->random_tuning.geomean_ratio);
  }
  return true;
}

// The distill job's steps, timed: the active column (the new platform
// fine-tuned from the teacher), the adapters asked for, the student, then
// student against teacher on every platform.
int run_distill(const Args& a, const std::vector<core::Record>& records, const tr::Platform& platform) {
  const std::string teacher = read_file(a.teacher + "/checkpoint");
  if (teacher.empty()) {
    std::fprintf(stderr, "no checkpoint in %s\n", a.teacher.c_str());
    return 1;
  }
  OldPlatforms old;
  if (!read_old_platforms(a, tr::TrainRequest::default_data_options(), &old)) return 1;
  onboarding::DistillSources sources;
  sources.old_descriptors = old.descriptors;
  std::vector<core::Record> bank;
  if (a.old_bank_ratio > 0 && !read_old_bank(a, distill_weights(a).max_old_bank, &bank)) return 1;
  sources.old_bank = bank;
  std::printf(
      "distill settings: the old platforms' bank %zu programs read, ratio %g; feature weight %g; the student's "
      "learning rate %g, teacher mix %g, old weight %g, ewc %g, column weight %g per old platform, old KD on new "
      "programs x%g\n",
      bank.size(), a.old_bank_ratio, a.feature_weight, a.student_lr, a.teacher_mix, a.old_weight, a.ewc,
      a.column_weight, a.old_weight_on_new);
  const Clock::time_point t0 = Clock::now();
  const tr::TrainRequest column = onboarding::column_request(
      default_request(a, records, platform), tr::FineTune{.init_checkpoint = teacher}, tr::kDistillColumnEpochs);
  auto tuned = tr::train_platform(column, progress_printer("column", t0));
  if (!tuned) {
    std::fprintf(stderr, "active column: %s\n", tuned.status().to_string().c_str());
    return 1;
  }
  print_result("column", *tuned);
  if (!run_adapters(a, records, platform, teacher)) return 1;
  if (a.column_only) return 0;
  sources.column_checkpoint = tuned->checkpoint;
  sources.teacher_fisher = read_file(a.teacher + "/fisher");
  const tr::TrainRequest request = student_request(a, records, platform, teacher, std::move(sources));
  auto student = tr::train_platform(request, progress_printer("distill", Clock::now()));
  if (!student) {
    std::fprintf(stderr, "distill: %s\n", student.status().to_string().c_str());
    return 1;
  }
  print_result("distill", *student);
  std::printf("distill: %lld programs of the old platforms' bank kept as KD inputs\n",
              static_cast<long long>(student->old_bank_programs));
  std::printf("distill job: column + student %.1f s\n", seconds_since(t0));
  if (!write_model(a.out, *student)) return 1;
  const Clock::time_point t2 = Clock::now();
  if (!compare_with_teacher(a, records, platform, old, student->checkpoint, teacher)) return 1;
  std::printf("evaluation %.1f s\n", seconds_since(t2));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse_args(argc, argv, &a)) return 2;
  const Clock::time_point t0 = Clock::now();
  std::vector<core::Record> records;
  if (!load_records(a.data, &records)) return 1;
  auto platform = tr::platform_of(records);
  if (!platform) {
    std::fprintf(stderr, "%s\n", platform.status().to_string().c_str());
    return 1;
  }
  *platform = tcl::bench::registered_as(*platform, a.target_override, a.hardware_override);
  auto device = tr::resolve_device(a.device);
  if (!device) {
    std::fprintf(stderr, "%s\n", device.status().to_string().c_str());
    return 1;
  }
  std::printf(
      "# bench_train %s%s: %zu records read in %.1f s; target %s; num_cores %s; device %s (%s asked); budget %g s, "
      "seed %llu\n",
      a.distill ? "--distill " : "", a.data.c_str(), records.size(), seconds_since(t0), platform->target.c_str(),
      platform->hardware ? std::to_string(platform->hardware->num_cores).c_str() : "none",
      std::string(tr::device_name(*device)).c_str(), std::string(tr::device_name(a.device)).c_str(), a.time_budget_s,
      static_cast<unsigned long long>(a.seed));
  std::fflush(stdout);
  const int rc = a.distill ? run_distill(a, records, *platform) : run_train(a, records, *platform);
  std::printf("total %.1f s\n", seconds_since(t0));
  return rc;
}
