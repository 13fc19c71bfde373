// bench_tune — issue 47's study: tunes a network with each cost model and
// seed (tuner/tuner.h, the call `tclctl tune` makes), on this CPU or on a
// CUDA GPU, with the lineage's model read from a checkpoint file through the
// student's fast path (what tcld serves for the platform) instead of tcld's
// predict: the GPU machine has no tcld. Nothing is uploaded.
//
//   bench_tune --network resnet50|mobilenet_v2|bert [--first-tasks N]
//              [--models lineage,lineage+online,online,random] [--seeds 1,2,3]
//              [--budget N] [--per-round N] [--warmup N] [--scheduler gradient|round-robin]
//              [--picks top,fast,diversity]
//              [--population N] [--population-per-pick N] [--target cpu|cuda] [--device N]
//              [--checkpoint FILE] [--checkpoint-platform NAME] [--threads T]
//              [--repeat N] [--out DIR] [--measure-command TCL_MEASURE]
//              [--measure-threads N] [--trace]
//   --anchors: no tuning; per task of the network, the best program of each
//   run in --out against LibTorch doing the same operator here and against
//   the roofline (bench/tune_anchors.h).
//   --measure-command: each round measured by `TCL_MEASURE run` in its own
//   process (on the GPU machine: a process that has loaded PyTorch's LibTorch
//   crashed in the measurer; tcl-measure itself does not load it).
//   --picks: each round's picks among the searched programs (tuner/search.h's
//   PickRule; top is Ansor's), a run for each.
//   Each run's folder is DIR/ + tuner::run_name(): NETWORK-MODEL-sSEED, with
//   -pick-RULE for a pick other than top and -warmup-N for a warm-up (run_dir.h:
//   rounds.csv is the curve; a rerun resumes). bench/tune_summary.py reads the folders.
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/lib/flags.h"
#include "core/features.h"
#include "core/files.h"
#include "measure/cpu_backend.h"
#include "measure/hardware.h"
#include "measure/measurer.h"
#include "measure/process.h"
#include "bench/tune_anchors.h"
#include "trainer/cost_model.h"
#include "trainer/fast_inference.h"
#include "tuner/tuner.h"
#if TCL_HAVE_CUDA
#include "measure/cuda_backend.h"
#endif

namespace {

using namespace tcl;  // NOLINT(google-build-using-namespace): a bench's main file

struct Args {
  std::string network = "resnet50";
  int first_tasks = 0;
  std::vector<std::string> models{"lineage", "lineage+online", "online", "random"};
  std::vector<std::string> seeds{"1", "2", "3"};
  std::vector<std::string> picks{"top"};
  int budget = 1000, per_round = 16, warmup = 0, population = 2048,
      population_per_pick = tuner::SearchOptions{}.population_per_pick, device = 0, threads = 1, repeat = 0;
  int measure_threads = 0;  // tcl-measure's --threads on the CPU (0: every core online)
  bool trace = false;       // a line per step of a round on stderr
  bool anchors = false;     // print the physical anchors of the runs in --out instead of tuning
  std::string scheduler = "gradient", target = "cpu", checkpoint, checkpoint_platform, out = "tune-study";
  std::string measure_command;  // a tcl-measure binary: measure in it, not in this process
};

bool parse(int argc, char** argv, Args* a) {
  std::string models, seeds, picks;
  bench::Flags flags;
  flags.value("network", &a->network)
      .value("first-tasks", &a->first_tasks)
      .value("models", &models)
      .value("seeds", &seeds)
      .value("picks", &picks)
      .value("budget", &a->budget)
      .value("per-round", &a->per_round)
      .value("warmup", &a->warmup)
      .value("population", &a->population)
      .value("population-per-pick", &a->population_per_pick)
      .value("scheduler", &a->scheduler)
      .value("target", &a->target)
      .value("device", &a->device)
      .value("checkpoint", &a->checkpoint)
      .value("checkpoint-platform", &a->checkpoint_platform)
      .value("threads", &a->threads)
      .value("repeat", &a->repeat)
      .value("out", &a->out)
      .value("measure-command", &a->measure_command)
      .value("measure-threads", &a->measure_threads)
      .flag("trace", &a->trace)
      .flag("anchors", &a->anchors);
  if (!flags.parse(argc, argv)) return false;
  if (!models.empty()) a->models = bench::split_list(models);
  if (!seeds.empty()) a->seeds = bench::split_list(seeds);
  if (!picks.empty()) a->picks = bench::split_list(picks);
  if (auto rule = tuner::scheduler_rule(a->scheduler); !rule) {
    std::fprintf(stderr, "--scheduler: %s\n", rule.status().message().c_str());
    return false;
  }
  for (const std::string& p : a->picks) {
    if (auto rule = tuner::pick_rule(p); !rule) {
      std::fprintf(stderr, "--picks: %s\n", rule.status().message().c_str());
      return false;
    }
  }
  if (a->target != "cpu" && a->target != "cuda") {
    std::fprintf(stderr, "--target is cpu or cuda\n");
    return false;
  }
  return true;
}

// The lineage's scores from a checkpoint: the fast path, as tcld's predict.
Result<tuner::LineageScorer> checkpoint_scorer(const Args& a) {
  std::string bytes;
  if (!core::read_file(a.checkpoint, &bytes)) return Status::not_found("cannot read " + a.checkpoint);
  auto model = trainer::CostModel::load_for_platform(bytes, a.checkpoint_platform);
  if (!model) return model.status();
  auto fast = trainer::StudentInference::create(**model, {.threads = a.threads});
  if (!fast) return fast.status();
  std::shared_ptr<trainer::StudentInference> shared(std::move(*fast));
  const int L = static_cast<int>(shared->config().max_len);
  return tuner::LineageScorer(
      [shared, L, trace = a.trace](std::span<const core::Record> records) -> Result<std::vector<double>> {
        const std::size_t n = records.size();
        if (trace) std::fprintf(stderr, "bench_tune: scoring %zu\n", n);
        std::vector<float> tokens(n * static_cast<std::size_t>(L) * core::kTokenDim), descriptor(core::kHardwareDim);
        std::vector<std::int32_t> lengths(n);
        core::encode_tokens_batch(records, L, tokens.data(), nullptr, lengths.data());
        if (n > 0) core::encode_hardware(records[0].hardware_params, records[0].target, descriptor.data());
        std::vector<float> scores(n);
        const trainer::FeatureBatch batch{static_cast<int64_t>(n), L, tokens, lengths, descriptor};
        if (Status s = shared->predict(batch, scores); !s) return s;
        return std::vector<double>(scores.begin(), scores.end());
      });
}

Result<measure::HardwareInfo> hardware(const Args& a) {
  if (a.target == "cpu") return measure::local_hardware();
#if TCL_HAVE_CUDA
  auto facts = measure::query_cuda_device(a.device);
  if (!facts) return facts.status();
  std::fprintf(stderr, "bench_tune: %s\n", measure::describe(*facts).c_str());
  return measure::cuda_hardware(*facts);
#else
  return Status::unavailable("built without the CUDA backend (TCL_CUDA_MEASURE)");
#endif
}

std::unique_ptr<measure::Backend> backend(const Args& a, const measure::HardwareInfo& hw) {
#if TCL_HAVE_CUDA
  if (hw.is_cuda()) {
    measure::CudaBackendOptions options;
    options.device = a.device;
    options.arch = hw.target.substr(hw.target.find("-arch=") + 6,
                                    hw.target.find(' ', hw.target.find("-arch=")) - hw.target.find("-arch=") - 6);
    return std::make_unique<measure::CudaBackend>(options);
  }
#endif
  (void)a;
  (void)hw;
  return nullptr;  // the Measurer's CPU backend
}

// A crash prints its stack (names with -rdynamic): the GPU machine has no debugger.
void print_stack_and_die(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

// One round through `tcl-measure run IN -o OUT` (records in and out as files).
std::vector<core::Record> measure_in_child(const Args& a, std::span<const core::Record> records) {
  const std::string in = a.out + "/.round-in.jsonl", out = a.out + "/.round-out.jsonl";
  std::string text;
  for (const core::Record& r : records) {
    core::write_record(r, &text);
    text.push_back('\n');
  }
  std::vector<core::Record> measured;
  if (!core::write_file_atomic(in, text)) return measured;
  std::vector<std::string> argv{a.measure_command,       "run", in, "-o", out, "--per-unit", "4", "--device",
                                std::to_string(a.device)};
  if (a.repeat > 0) argv.insert(argv.end(), {"--repeat", std::to_string(a.repeat)});
  if (a.measure_threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(a.measure_threads)});
  const measure::CommandResult r = measure::run_command(argv, 3600);
  if (r.exit_code != 0) std::fprintf(stderr, "bench_tune: tcl-measure: %s\n", r.output.c_str());
  std::string lines;
  core::read_file(out, &lines);
  std::size_t start = 0;
  for (std::size_t end; (end = lines.find('\n', start)) != std::string::npos; start = end + 1) {
    auto rec = core::parse_record(std::string_view(lines).substr(start, end - start));
    if (rec) measured.push_back(std::move(*rec));
  }
  return measured;
}

// One run's options: MODEL with PICK at SEED; its folder under --out.
tuner::TuneOptions options_of(const Args& a, const std::vector<measure::Task>& tasks, const measure::HardwareInfo& hw,
                              const std::string& model, const std::string& pick, const std::string& seed) {
  tuner::TuneOptions o;
  o.network = a.network;
  o.tasks = tasks;
  o.hardware = hw;
  o.model = model;
  o.budget = a.budget;
  o.per_round = a.per_round;
  o.warmup = a.warmup;
  o.seed = std::stoull(seed);
  o.search.population = a.population;
  o.search.population_per_pick = a.population_per_pick;
  o.search.pick = *tuner::pick_rule(pick);  // checked by parse()
  o.scheduler = *tuner::scheduler_rule(a.scheduler);
  o.dir = a.out + "/" + tuner::run_name(o);
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGSEGV, print_stack_and_die);
  signal(SIGABRT, print_stack_and_die);
  Args a;
  if (!parse(argc, argv, &a)) return 2;
  auto tasks = measure::model_tasks(a.network);
  auto hw = hardware(a);
  if (!tasks || !hw) {
    std::fprintf(stderr, "bench_tune: %s\n", (!tasks ? tasks.status() : hw.status()).message().c_str());
    return 2;
  }
  std::vector<measure::Task> kept;
  for (const measure::Task& t : *tasks) {
    if (hw->is_cuda() && !measure::gpu_supported(t.workload)) continue;  // softmax has no GPU sketch
    if (a.first_tasks > 0 && static_cast<int>(kept.size()) >= a.first_tasks) break;
    kept.push_back(t);
  }
  if (a.anchors) return bench::print_anchors(a.network, kept, a.out) ? 0 : 1;
  tuner::TuneHooks hooks;
  if (!a.checkpoint.empty()) {
    auto scorer = checkpoint_scorer(a);
    if (!scorer) {
      std::fprintf(stderr, "bench_tune: %s\n", scorer.status().message().c_str());
      return 1;
    }
    hooks.lineage = *scorer;
  }
  hooks.measure = [&](std::span<const core::Record> records) {
    if (a.trace) std::fprintf(stderr, "bench_tune: measuring %zu\n", records.size());
    if (!a.measure_command.empty()) return measure_in_child(a, records);
    measure::MeasureOptions m;
    m.programs_per_unit = hw->is_cuda() ? 4 : 8;  // NVRTC compiles units in parallel, one per CPU
    if (a.repeat > 0) m.runner.timing.repeat = a.repeat;
    measure::Measurer measurer(m, backend(a, *hw));
    auto measured = measurer.measure(records);
    if (a.trace) std::fprintf(stderr, "bench_tune: measured\n");
    return measured;
  };
  for (const std::string& model : a.models) {
    for (const std::string& pick : a.picks) {
      if (model == "random" && pick != "top") continue;  // random searches nothing: no pick to make
      for (const std::string& seed : a.seeds) {
        const tuner::TuneOptions o = options_of(a, kept, *hw, model, pick, seed);
        const std::string label = model + (pick == "top" ? "" : " pick=" + pick);
        hooks.progress = [&](const tuner::RoundReport& r, bool replayed) {
          if (a.trace) std::fprintf(stderr, "bench_tune: round %d done\n", r.round);
          if (replayed) return;
          std::fprintf(stderr, "\r%s %s s%s: %d/%d measured, network %.4f ms   ", a.network.c_str(), label.c_str(),
                       seed.c_str(), r.measured, a.budget, r.network_seconds * 1e3);
        };
        auto result = tuner::tune(o, hooks);
        if (!result) {
          std::fprintf(stderr, "\nbench_tune: %s: %s\n", o.dir.c_str(), result.status().message().c_str());
          return 1;
        }
        std::printf("%s %s seed %s: %d measured, network %.6f ms\n", a.network.c_str(), label.c_str(), seed.c_str(),
                    result->measured, result->network_seconds * 1e3);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
