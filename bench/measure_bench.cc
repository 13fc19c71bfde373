// tcl-measure on this machine (issue 7 item 7): for one real task of every
// operator kind, sample N schedules, measure them, and print
//   - programs measured per minute (build + verify + time, wall clock),
//   - the spread of repeated timings (coefficient of variation of a
//     program's costs: median and 90th percentile over the programs),
//   - best, median and worst schedule of the task, and median / best
//     (the space must hold real differences: >= 5x for matmul and conv2d).
//
//   bench_measure [--per-task N] [--seed S] [--repeat R] [--min-repeat-ms MS] [--threads T] [--per-unit U]
//                 [--kinds matmul,conv2d_nhwc,...]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/lib/flags.h"
#include "measure/candidates.h"
#include "measure/cpu_backend.h"
#include "measure/hardware.h"
#include "measure/measurer.h"

using namespace tcl;
using namespace tcl::measure;

namespace {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace

int main(int argc, char** argv) {
  int per_task = 32, repeat = 5, threads = 0, per_unit = 32;
  double min_repeat_ms = 2;
  std::uint64_t seed = 1;
  std::string kinds = "matmul,batch_matmul,conv2d_nhwc,depthwise_conv2d_nhwc,softmax";
  tcl::bench::Flags flags;
  flags.value("per-task", &per_task)
      .value("seed", &seed)
      .value("repeat", &repeat)
      .value("threads", &threads)
      .value("min-repeat-ms", &min_repeat_ms)
      .value("per-unit", &per_unit)
      .value("kinds", &kinds);
  if (!flags.parse(argc, argv)) return 2;
  // One representative task per kind, with its network's real shape.
  const Workload tasks[] = {
      {OpKind::kMatmul, {128, 768, 768}},                        // BERT-base QKV / output projection
      {OpKind::kBatchMatmul, {12, 128, 128, 64}},                // BERT-base Q K^T
      {OpKind::kConv2d, {1, 56, 56, 64, 64, 3, 3, 1, 1}},        // ResNet-50 stage 1 3x3
      {OpKind::kDepthwiseConv2d, {1, 56, 56, 144, 3, 3, 1, 1}},  // MobileNet-V2 block 2
      {OpKind::kSoftmax, {1536, 128}},                           // BERT-base attention probabilities
  };
  for (const std::string& kind : tcl::bench::split_list(kinds)) {
    if (std::none_of(std::begin(tasks), std::end(tasks),
                     [&](const Workload& w) { return op_kind_name(w.kind) == kind; })) {
      std::fprintf(stderr, "--kinds: no task of kind '%s'\n", kind.c_str());
      return 2;
    }
  }
  const HardwareInfo hw = local_hardware();
  std::printf(
      "machine: %s, hardware_params [%lld, %lld, %lld, 0, 0, 0, 0, 0]; %d schedules per task, repeat %d, "
      "min_repeat_ms %g, threads %d\n",
      hw.target.c_str(), static_cast<long long>(hw.params.num_cores),
      static_cast<long long>(hw.params.vector_unit_bytes), static_cast<long long>(hw.params.cache_line_bytes), per_task,
      repeat, min_repeat_ms, threads > 0 ? threads : hw.num_cores);
  std::printf("%-24s %7s %9s %8s %8s %11s %11s %11s %9s %9s\n", "kind", "ok/all", "progs/min", "cv_med", "cv_p90",
              "best_s", "median_s", "worst_s", "med/best", "GFLOP/s");
  for (const Workload& w : tasks) {
    if (("," + kinds + ",").find("," + std::string(op_kind_name(w.kind)) + ",") == std::string::npos) continue;
    const auto records = workload_candidates(w, per_task, seed, hw);
    MeasureOptions options;
    options.programs_per_unit = per_unit;
    options.runner.timing.repeat = repeat;
    options.runner.timing.min_repeat_seconds = min_repeat_ms / 1e3;
    options.runner.timeout_seconds = 30;
    CpuBackendOptions cpu;
    cpu.num_threads = threads;
    Measurer m(options, std::make_unique<CpuBackend>(cpu));
    const auto start = std::chrono::steady_clock::now();
    const auto out = m.measure(records);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::vector<double> means, cvs;
    for (const auto& r : out) {
      if (r.error_no != 0) continue;
      double mean = 0, var = 0;
      for (double c : r.costs) mean += c;
      mean /= static_cast<double>(r.costs.size());
      for (double c : r.costs) var += (c - mean) * (c - mean);
      var /= std::max<double>(1, static_cast<double>(r.costs.size()) - 1);
      means.push_back(mean);
      cvs.push_back(std::sqrt(var) / mean);
    }
    const double best = percentile(means, 0), median = percentile(means, 0.5), worst = percentile(means, 1);
    std::printf("%-24s %3zu/%-3zu %9.1f %8.3f %8.3f %11.3e %11.3e %11.3e %9.1f %9.2f\n",
                std::string(op_kind_name(w.kind)).c_str(), means.size(), out.size(),
                60.0 * static_cast<double>(out.size()) / wall, percentile(cvs, 0.5), percentile(cvs, 0.9), best, median,
                worst, median / best, flop_count(w) / best / 1e9);
    std::fflush(stdout);
  }
  return 0;
}
