// tcl-measure — real measurements of tensor programs on this machine, in TVM's
// record format (measure/README.md).
//
//   tcl-measure candidates --model resnet50|mobilenet_v2|bert --per-task N [--seed S] [--target cpu|cuda]
//                          [--device N] -o pool.jsonl
//   tcl-measure run to-measure.jsonl[.gz] -o measured.jsonl [--per-unit 32] [--repeat 5]
//                   [--min-repeat-ms 2] [--budget-s 1] [--timeout-s 10] [--threads N] [--build-jobs N]
//                   [--device N]
//   tcl-measure hardware [--target cpu|cuda] [--device N]
// `run` measures llvm records on this CPU and cuda records on a CUDA GPU (a
// build with the CUDA backend: measure/cuda_backend.h); one kind per file.
// Exit status: 0 done, 1 bad input or I/O error, 2 bad usage.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "core/line_reader.h"
#include "core/record.h"
#include "measure/candidates.h"
#include "measure/cpu_backend.h"
#include "measure/hardware.h"
#include "measure/measurer.h"
#if TCL_HAVE_CUDA
#include "measure/cuda_backend.h"
#endif

namespace {

using namespace tcl;

constexpr const char* kUsage =
    "usage: tcl-measure candidates --model resnet50|mobilenet_v2|bert --per-task N [--seed S] [--target cpu|cuda]\n"
    "                              [--device N]\n"
    "                              -o POOL.jsonl\n"
    "       tcl-measure run IN.jsonl[.gz] -o OUT.jsonl [--per-unit N] [--repeat N] [--min-repeat-ms MS]\n"
    "                       [--budget-s S] [--timeout-s S] [--threads N] [--build-jobs N] [--device N]\n"
    "       tcl-measure hardware [--target cpu|cuda] [--device N]\n";

int usage(const std::string& why) {
  std::cerr << "tcl-measure: " << why << "\n" << kUsage;
  return 2;
}

// --flag value pairs and positional arguments.
struct Args {
  std::map<std::string, std::string> flags;
  std::vector<std::string> positional;
  std::string error;
};
Args parse_args(int argc, char** argv, int first) {
  Args a;
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (s.starts_with("-") && s.size() > 1) {
      if (i + 1 >= argc) {
        a.error = s + " needs a value";
        return a;
      }
      a.flags[s] = argv[++i];
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

bool get_number(const Args& a, const std::string& flag, double* out, std::string* error) {
  auto it = a.flags.find(flag);
  if (it == a.flags.end()) return true;
  char* end = nullptr;
  *out = std::strtod(it->second.c_str(), &end);
  if (end == it->second.c_str() || *end != '\0' || *out < 0) {
    *error = flag + " expects a non-negative number, got '" + it->second + "'";
    return false;
  }
  return true;
}

std::string output_path(const Args& a) {
  if (auto it = a.flags.find("-o"); it != a.flags.end()) return it->second;
  if (auto it = a.flags.find("--output"); it != a.flags.end()) return it->second;
  return "";
}

int write_records(const std::string& path, const std::vector<core::Record>& records) {
  std::ofstream f(path, std::ios::trunc);
  std::string line;
  for (const auto& r : records) {
    line.clear();
    core::write_record(r, &line);
    f << line << '\n';
  }
  f.flush();
  if (!f) {
    std::cerr << "tcl-measure: cannot write " << path << "\n";
    return 1;
  }
  return 0;
}

// The CUDA GPU `device` as TVM describes it, read from the device in a build
// with the CUDA backend; otherwise (or without a device) TVM's defaults for
// an sm_90 card, with *note saying so.
measure::HardwareInfo cuda_target(int device, std::string* note) {
#if TCL_HAVE_CUDA
  auto facts = measure::query_cuda_device(device);
  if (facts) {
    *note = measure::describe(*facts);
    return measure::cuda_hardware(*facts);
  }
  *note = "no device (" + facts.status().message() + "): TVM's defaults for sm_90";
#else
  (void)device;
  *note = "built without CUDA: TVM's defaults for sm_90";
#endif
  return measure::cuda_hardware();
}

int cmd_hardware(const Args& a) {
  for (const auto& [flag, value] : a.flags) {
    if (flag != "--target" && flag != "--device") return usage("unknown flag " + flag);
  }
  const std::string target = a.flags.count("--target") ? a.flags.at("--target") : "cpu";
  if (target != "cpu" && target != "cuda") return usage("--target must be cpu or cuda");
  double device = 0;
  std::string error, note;
  if (!get_number(a, "--device", &device, &error)) return usage(error);
  const auto hw = target == "cuda" ? cuda_target(static_cast<int>(device), &note) : measure::local_hardware();
  const auto& p = hw.params;
  std::cout << "target: " << hw.target << "\nhardware_params: [" << p.num_cores << ", " << p.vector_unit_bytes << ", "
            << p.cache_line_bytes << ", " << p.max_shared_memory_per_block << ", " << p.max_local_memory_per_block
            << ", " << p.max_threads_per_block << ", " << p.max_vthread_extent << ", " << p.warp_size << "]\n";
  if (!note.empty()) std::cout << "device: " << note << "\n";
  return 0;
}

int cmd_candidates(const Args& a) {
  for (const auto& [flag, value] : a.flags) {
    if (flag != "--model" && flag != "--per-task" && flag != "--seed" && flag != "-o" && flag != "--output" &&
        flag != "--target" && flag != "--device")
      return usage("unknown flag " + flag);
  }
  const std::string out = output_path(a);
  if (!a.flags.count("--model") || out.empty()) return usage("candidates needs --model and -o");
  double per_task = 16, seed = 1, device = 0;
  std::string error;
  if (!get_number(a, "--per-task", &per_task, &error) || !get_number(a, "--seed", &seed, &error) ||
      !get_number(a, "--device", &device, &error))
    return usage(error);
  if (per_task < 1) return usage("--per-task must be at least 1");
  // cuda: the GPU sketch within the device's limits (on the GPU machine) or
  // TVM's defaults for an sm_90 card (anywhere else).
  const std::string target = a.flags.count("--target") ? a.flags.at("--target") : "cpu";
  if (target != "cpu" && target != "cuda") return usage("--target must be cpu or cuda");
  std::string note;
  const measure::HardwareInfo hw =
      target == "cuda" ? cuda_target(static_cast<int>(device), &note) : measure::local_hardware();
  if (!note.empty()) std::cerr << "tcl-measure: cuda target from " << note << "\n";
  auto records = measure::generate_candidates(a.flags.at("--model"), static_cast<int>(per_task),
                                              static_cast<std::uint64_t>(seed), hw);
  if (!records) {
    std::cerr << "tcl-measure: " << records.status().message() << "\n";
    return 1;
  }
  if (int rc = write_records(out, *records); rc != 0) return rc;
  std::cerr << "tcl-measure: wrote " << records->size() << " candidates to " << out << "\n";
  return 0;
}

// The backend for the records' target: the CPU for llvm records, the CUDA
// GPU `device` for cuda ones (one kind per file).
Result<std::unique_ptr<measure::Backend>> make_backend(const std::vector<core::Record>& records, int threads,
                                                       int device) {
  const auto is_cuda = [](const core::Record& r) { return r.target.starts_with("cuda"); };
  const bool cuda = !records.empty() && is_cuda(records.front());
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (is_cuda(records[i]) != cuda)
      return Status::invalid_argument("record " + std::to_string(i + 1) + " targets " + records[i].target +
                                      ", record 1 " + records.front().target + ": one kind of target per file");
  }
  if (!cuda) {
    measure::CpuBackendOptions cpu;
    cpu.num_threads = threads;
    return std::unique_ptr<measure::Backend>(std::make_unique<measure::CpuBackend>(cpu));
  }
#if TCL_HAVE_CUDA
  auto facts = measure::query_cuda_device(device);
  if (!facts) return facts.status();
  std::cerr << "tcl-measure: measuring on " << measure::describe(*facts) << "\n";
  measure::CudaBackendOptions options;
  options.device = device;
  options.arch = facts->arch;
  return std::unique_ptr<measure::Backend>(std::make_unique<measure::CudaBackend>(options));
#else
  (void)device;
  return Status::unavailable(
      "cuda records: this tcl-measure was built without the CUDA backend (build it where CMake finds CUDA)");
#endif
}

int cmd_run(const Args& a) {
  static const char* kKnown[] = {"-o",         "--output",    "--per-unit", "--repeat",     "--min-repeat-ms",
                                 "--budget-s", "--timeout-s", "--threads",  "--build-jobs", "--device"};
  for (const auto& [flag, value] : a.flags) {
    if (std::find(std::begin(kKnown), std::end(kKnown), flag) == std::end(kKnown)) return usage("unknown flag " + flag);
  }
  const std::string out = output_path(a);
  if (a.positional.size() != 1 || out.empty()) return usage("run needs one input file and -o");
  measure::MeasureOptions options;
  double per_unit = options.programs_per_unit, repeat = options.runner.timing.repeat,
         min_repeat_ms = 1e3 * options.runner.timing.min_repeat_seconds;
  double budget = options.runner.timing.budget_seconds, timeout = options.runner.timeout_seconds, threads = 0;
  double build_jobs = 0, device = 0;
  std::string error;
  if (!get_number(a, "--per-unit", &per_unit, &error) || !get_number(a, "--repeat", &repeat, &error) ||
      !get_number(a, "--min-repeat-ms", &min_repeat_ms, &error) || !get_number(a, "--budget-s", &budget, &error) ||
      !get_number(a, "--timeout-s", &timeout, &error) || !get_number(a, "--threads", &threads, &error) ||
      !get_number(a, "--build-jobs", &build_jobs, &error) || !get_number(a, "--device", &device, &error)) {
    return usage(error);
  }
  options.build_jobs = static_cast<int>(build_jobs);
  options.programs_per_unit = std::max(1, static_cast<int>(per_unit));
  options.runner.timing.repeat = std::max(1, static_cast<int>(repeat));
  options.runner.timing.min_repeat_seconds = min_repeat_ms / 1e3;
  options.runner.timing.budget_seconds = budget;
  options.runner.timeout_seconds = timeout > 0 ? timeout : 10;

  auto reader = core::LineReader::open(a.positional[0]);
  if (!reader) {
    std::cerr << "tcl-measure: " << reader.status().message() << "\n";
    return 1;
  }
  core::RecordParser parser;
  std::vector<core::Record> records;
  std::string_view line;
  while ((*reader)->next(&line)) {
    if (core::is_skippable_line(line)) continue;
    core::Record r;
    if (Status st = parser.parse(line, &r); !st) {
      std::cerr << "tcl-measure: " << a.positional[0] << ":" << (*reader)->line_number() << ": " << st.message()
                << "\n";
      return 1;
    }
    records.push_back(std::move(r));
  }
  if (!(*reader)->status()) {
    std::cerr << "tcl-measure: " << (*reader)->status().message() << "\n";
    return 1;
  }
  auto backend = make_backend(records, static_cast<int>(threads), static_cast<int>(device));
  if (!backend) {
    std::cerr << "tcl-measure: " << backend.status().message() << "\n";
    return 1;
  }
  measure::Measurer measurer(options, std::move(*backend));
  auto measured = measurer.measure(records, [](const measure::MeasureProgress& p) {
    std::fprintf(stderr, "\rtcl-measure: %zu/%zu measured, %zu failed", p.done, p.total, p.failed);
  });
  std::fprintf(stderr, "\n");
  const auto& errors = measurer.last_errors();
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i].empty()) {
      std::cerr << "tcl-measure: record " << i + 1 << ": " << core::measure_error_name(measured[i].error_no) << ": "
                << errors[i].substr(0, 300) << "\n";
    }
  }
  return write_records(out, measured);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage("no command");
  const std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << kUsage;
    return 0;
  }
  Args a = parse_args(argc, argv, 2);
  if (!a.error.empty()) return usage(a.error);
  if (cmd == "hardware") return cmd_hardware(a);
  if (cmd == "candidates") return cmd_candidates(a);
  if (cmd == "run") return cmd_run(a);
  return usage("unknown command " + cmd);
}
