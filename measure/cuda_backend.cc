#include "measure/cuda_backend.h"

#include <cuda.h>
#include <nvrtc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

#include "core/files.h"
#include "core/record.h"
#include "measure/codegen_cuda.h"
#include "measure/process.h"
#include "measure/reference.h"

namespace tcl::measure {
namespace {

using Clock = std::chrono::steady_clock;
// The build child's status for an NVRTC error (the sources are to blame);
// any other failure of the child (exit 1) is the environment's.
constexpr int kCompileFailedExit = 88;

std::string cu_error(CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  cuGetErrorName(r, &name);
  cuGetErrorString(r, &text);
  return std::string(name != nullptr ? name : "CUDA error " + std::to_string(static_cast<int>(r))) + ": " +
         (text != nullptr ? text : "");
}

std::int32_t error_no(core::MeasureError e) { return static_cast<std::int32_t>(e); }

// The error lines of an NVRTC log (warnings are off; the log may still be long).
std::string error_lines(const std::string& log) {
  std::istringstream in(log);
  std::string line, out;
  for (int n = 0; std::getline(in, line) && n < 12;) {
    if (line.find("error") == std::string::npos) continue;
    out += line + "\n";
    ++n;
  }
  return out.empty() ? log.substr(0, 2000) : out;
}

// Runs in the build child: NVRTC compiles `source` for `arch` into a cubin
// at `cubin_path`. Exit status 0, or kCompileFailedExit with the errors on
// stderr, or 1 when NVRTC itself fails.
int compile_module(const std::string& source, const std::string& arch, const std::string& cubin_path) {
  nvrtcProgram program;
  if (nvrtcResult r = nvrtcCreateProgram(&program, source.c_str(), "tcl_module.cu", 0, nullptr, nullptr);
      r != NVRTC_SUCCESS) {
    std::fprintf(stderr, "nvrtcCreateProgram: %s\n", nvrtcGetErrorString(r));
    return 1;
  }
  const std::string arch_flag = "--gpu-architecture=" + arch;
  const char* flags[] = {arch_flag.c_str(), "--disable-warnings"};
  const nvrtcResult compiled = nvrtcCompileProgram(program, 2, flags);
  if (compiled != NVRTC_SUCCESS) {
    std::size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program, log.data());
    std::fprintf(stderr, "%s: %s", nvrtcGetErrorString(compiled), error_lines(log).c_str());
    return kCompileFailedExit;
  }
  std::size_t size = 0;
  nvrtcGetCUBINSize(program, &size);
  std::string cubin(size, '\0');
  nvrtcGetCUBIN(program, cubin.data());
  nvrtcDestroyProgram(&program);
  if (!core::write_file_atomic(cubin_path, std::string_view(cubin.data(), cubin.size()))) {
    std::fprintf(stderr, "cannot write %s\n", cubin_path.c_str());
    return 1;
  }
  return 0;
}

// A workload's inputs and output in device memory and its reference output
// on the host. The reference is computed once per module directory and kept
// beside the modules (every child of a measurement run reuses it).
struct Fixture {
  CUdeviceptr in[2] = {0, 0};
  CUdeviceptr out = 0;
  std::vector<float> want;
};

std::vector<float> reference_output(const Workload& w, const std::vector<std::vector<float>>& inputs,
                                    const std::string& cache_dir) {
  const std::string key = encode_workload_key(w);
  std::vector<float> want(static_cast<std::size_t>(output_size(w)));
  // The size in the name, and the whole file read: a file of another
  // workload (a hash collision) or a torn one is never taken.
  const std::string path = cache_dir + "/reference_" + std::to_string(std::hash<std::string>{}(key)) + "_" +
                           std::to_string(want.size()) + ".f32";
  const auto bytes = static_cast<std::streamsize>(want.size() * sizeof(float));
  if (std::ifstream f(path, std::ios::binary);
      f && f.read(reinterpret_cast<char*>(want.data()), bytes) && f.peek() == std::ifstream::traits_type::eof())
    return want;
  reference(w, inputs[0].data(), inputs.size() > 1 ? inputs[1].data() : nullptr, want.data());
  core::write_file_atomic(path, std::string_view(reinterpret_cast<const char*>(want.data()),
                                                 want.size() * sizeof(float)));  // a cache: failure only costs time
  return want;
}

class CudaSession : public Session {
 public:
  CudaSession(CUmodule module, CUevent start, CUevent stop, std::string cache_dir)
      : module_(module), cache_dir_(std::move(cache_dir)), start_(start), stop_(stop) {}
  // The process ends right after; a spoilt context refuses these calls anyway.
  ~CudaSession() override = default;

  bool usable() const override { return usable_; }

  RunResult run(const Program& program, std::string_view symbol, const TimingOptions& timing) override {
    CUfunction function;
    if (CUresult r = cuModuleGetFunction(&function, module_, std::string(symbol).c_str()); r != CUDA_SUCCESS)
      return failure(core::MeasureError::kRuntimeDeviceError, "symbol " + std::string(symbol) + ": " + cu_error(r));
    const CudaLaunch launch = cuda_launch(program.workload, std::get<GpuSchedule>(program.schedule));
    std::string error;
    const Fixture* fx = fixture(program.workload, &error);
    if (fx == nullptr) return failure(core::MeasureError::kRuntimeDeviceError, error);
    if (RunResult checked = verify(function, launch, *fx); checked.error_no != 0) return checked;

    return time_repeats(function, launch, *fx, timing);
  }

 private:
  static RunResult failure(core::MeasureError e, std::string message) {
    RunResult r;
    r.error_no = error_no(e);
    r.message = std::move(message);
    return r;
  }
  // An error of a running kernel leaves the context unusable.
  RunResult spoilt(std::string message) {
    usable_ = false;
    return failure(core::MeasureError::kRuntimeDeviceError, std::move(message));
  }

  static CUresult launch_once(CUfunction function, const CudaLaunch& l, const Fixture& fx) {
    CUdeviceptr in0 = fx.in[0], in1 = fx.in[1], out = fx.out;
    void* args[] = {&in0, &in1, &out};
    return cuLaunchKernel(function, static_cast<unsigned>(l.grid[0]), static_cast<unsigned>(l.grid[1]),
                          static_cast<unsigned>(l.grid[2]), static_cast<unsigned>(l.block[0]),
                          static_cast<unsigned>(l.block[1]), static_cast<unsigned>(l.block[2]),
                          static_cast<unsigned>(l.dynamic_shared_bytes), nullptr, args, nullptr);
  }

  // As TVM's time_evaluator: a repeat shorter than min_repeat_seconds is
  // run again with more launches (at least 1.618x), then `repeat` repeats
  // of that many back-to-back launches; stops early past the budget.
  RunResult time_repeats(CUfunction function, const CudaLaunch& launch, const Fixture& fx,
                         const TimingOptions& timing) {
    RunResult result;
    const auto timing_start = Clock::now();
    int number = 1;
    while (static_cast<int>(result.costs.size()) < timing.repeat) {
      float ms = 0;
      if (CUresult r = time_launches(function, launch, fx, number, &ms); r != CUDA_SUCCESS)
        return spoilt("timing: " + cu_error(r));
      const double seconds = 1e-3 * ms;
      if (seconds < timing.min_repeat_seconds && number < 1'000'000) {
        const double per_launch = std::max(seconds / number, 1e-9);
        number = static_cast<int>(
            std::min(1e6, std::max(std::ceil(timing.min_repeat_seconds / per_launch), std::ceil(1.618 * number))));
        continue;
      }
      result.costs.push_back(seconds / number);
      if (std::chrono::duration<double>(Clock::now() - timing_start).count() > timing.budget_seconds) break;
    }
    return result;
  }

  // One launch on an output full of NaN, compared with the reference.
  RunResult verify(CUfunction function, const CudaLaunch& launch, const Fixture& fx) {
    const std::size_t n = fx.want.size();
    if (CUresult r = cuMemsetD32(fx.out, 0x7fc00000u, n); r != CUDA_SUCCESS) return spoilt("memset: " + cu_error(r));
    // A launch refused up front (out of resources, bad configuration)
    // leaves the context usable; an earlier kernel's error reported here
    // does not, and a synchronize tells which.
    if (CUresult r = launch_once(function, launch, fx); r != CUDA_SUCCESS) {
      if (cuCtxSynchronize() != CUDA_SUCCESS) return spoilt("launch: " + cu_error(r));
      return failure(core::MeasureError::kRuntimeDeviceError, "launch: " + cu_error(r));
    }
    if (CUresult r = cuCtxSynchronize(); r != CUDA_SUCCESS) return spoilt("kernel: " + cu_error(r));
    std::vector<float> got(n);
    if (CUresult r = cuMemcpyDtoH(got.data(), fx.out, n * sizeof(float)); r != CUDA_SUCCESS)
      return spoilt("copy: " + cu_error(r));
    if (std::string diff = compare_outputs(got, fx.want); !diff.empty())
      return failure(core::MeasureError::kWrongAnswerError, diff);
    return {};
  }

  CUresult time_launches(CUfunction function, const CudaLaunch& launch, const Fixture& fx, int number, float* ms) {
    CUresult r = cuEventRecord(start_, nullptr);
    for (int i = 0; i < number && r == CUDA_SUCCESS; ++i) r = launch_once(function, launch, fx);
    if (r == CUDA_SUCCESS) r = cuEventRecord(stop_, nullptr);
    if (r == CUDA_SUCCESS) r = cuEventSynchronize(stop_);
    if (r == CUDA_SUCCESS) r = cuEventElapsedTime(ms, start_, stop_);
    return r;
  }

  const Fixture* fixture(const Workload& w, std::string* error) {
    const std::string key = encode_workload_key(w);
    if (auto it = fixtures_.find(key); it != fixtures_.end()) return &it->second;
    const auto inputs = make_inputs(w);
    Fixture fx;
    for (std::size_t i = 0; i < inputs.size() && i < 2; ++i) {
      const std::size_t bytes = inputs[i].size() * sizeof(float);
      if (CUresult r = cuMemAlloc(&fx.in[i], bytes); r != CUDA_SUCCESS) {
        *error = "input allocation: " + cu_error(r);
        return nullptr;
      }
      if (CUresult r = cuMemcpyHtoD(fx.in[i], inputs[i].data(), bytes); r != CUDA_SUCCESS) {
        *error = "input copy: " + cu_error(r);
        return nullptr;
      }
    }
    fx.want = reference_output(w, inputs, cache_dir_);
    if (CUresult r = cuMemAlloc(&fx.out, fx.want.size() * sizeof(float)); r != CUDA_SUCCESS) {
      *error = "output allocation: " + cu_error(r);
      return nullptr;
    }
    return &fixtures_.emplace(key, std::move(fx)).first->second;
  }

  CUmodule module_;
  std::string cache_dir_;
  CUevent start_, stop_;
  bool usable_ = true;
  std::map<std::string, Fixture> fixtures_;
};

}  // namespace

CudaBackend::CudaBackend(CudaBackendOptions options) : options_(std::move(options)) {}

std::string CudaBackend::codegen(const Program& program, std::string_view symbol) const {
  return generate_cuda_kernel(program.workload, std::get<GpuSchedule>(program.schedule), symbol).source;
}

BuildResult CudaBackend::build(std::span<const std::string> sources, const std::string& path_stem) const {
  BuildResult result;
  const auto start = Clock::now();
  std::string source = "// Generated by tcl-measure (measure/codegen_cuda.h).\n\n";
  for (const auto& s : sources) source += s + "\n";
  const std::string cubin = path_stem + ".cubin";
  const CommandResult child =
      run_forked([&] { return compile_module(source, options_.arch, cubin); }, options_.build_timeout_seconds);
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (child.timed_out) {
    result.error_no = error_no(core::MeasureError::kBuildTimeoutError);
    result.message = "NVRTC ran past " + std::to_string(options_.build_timeout_seconds) + " s";
  } else if (child.exit_code == kCompileFailedExit || (child.started && child.exit_code < 0)) {
    // An NVRTC error or a crash of the compiler: the sources are to blame
    // (the measurer bisects the unit).
    result.error_no = error_no(core::MeasureError::kCompileDeviceError);
    result.message = child.output.empty() ? "NVRTC failed" : child.output;
  } else if (child.exit_code != 0) {
    // No fork, NVRTC's own failure, no disk: not the sources (not bisected).
    result.error_no = error_no(core::MeasureError::kUnknownError);
    result.message = child.output.empty() ? "the NVRTC child failed" : child.output;
  } else {
    result.module_path = cubin;
  }
  return result;
}

std::unique_ptr<Session> CudaBackend::open(const std::string& module_path, std::string* error) const {
  CUdevice device;
  CUcontext context;
  CUmodule module;
  CUevent start, stop;
  CUresult r = cuInit(0);
  if (r == CUDA_SUCCESS) r = cuDeviceGet(&device, options_.device);
  if (r == CUDA_SUCCESS) r = cuDevicePrimaryCtxRetain(&context, device);
  if (r == CUDA_SUCCESS) r = cuCtxSetCurrent(context);
  if (r == CUDA_SUCCESS) r = cuModuleLoad(&module, module_path.c_str());
  if (r == CUDA_SUCCESS) r = cuEventCreate(&start, CU_EVENT_DEFAULT);
  if (r == CUDA_SUCCESS) r = cuEventCreate(&stop, CU_EVENT_DEFAULT);
  if (r != CUDA_SUCCESS) {
    *error = "opening " + module_path + ": " + cu_error(r);
    return nullptr;
  }
  return std::make_unique<CudaSession>(module, start, stop, std::filesystem::path(module_path).parent_path().string());
}

namespace {

// The facts as one fixed-size message from the query child.
struct FactsMessage {
  char name[256] = {};
  int major = 0, minor = 0, sms = 0, threads = 0, shared = 0, registers = 0, warp = 0;
  unsigned long long memory = 0;
};

CUresult read_facts(int ordinal, FactsMessage* m) {
  CUdevice device;
  CUresult r = cuInit(0);
  if (r == CUDA_SUCCESS) r = cuDeviceGet(&device, ordinal);
  if (r == CUDA_SUCCESS) r = cuDeviceGetName(m->name, sizeof(m->name) - 1, device);
  const std::pair<int*, CUdevice_attribute> attributes[] = {
      {&m->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {&m->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {&m->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {&m->threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {&m->shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
      {&m->registers, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
      {&m->warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE},
  };
  for (const auto& [field, attribute] : attributes) {
    if (r == CUDA_SUCCESS) r = cuDeviceGetAttribute(field, attribute, device);
  }
  std::size_t memory = 0;
  if (r == CUDA_SUCCESS) r = cuDeviceTotalMem(&memory, device);
  m->memory = memory;
  return r;
}

}  // namespace

Result<GpuFacts> query_cuda_device(int device) {
  // The child writes the message to fd 1 (run_forked's pipe) as hex, so
  // that its bytes survive the output's text handling.
  const CommandResult child = run_forked(
      [device] {
        FactsMessage m;
        if (CUresult r = read_facts(device, &m); r != CUDA_SUCCESS) {
          std::fprintf(stderr, "%s", cu_error(r).c_str());
          return 1;
        }
        const auto* bytes = reinterpret_cast<const unsigned char*>(&m);
        std::string hex;
        for (std::size_t i = 0; i < sizeof(m); ++i) {
          hex += "0123456789abcdef"[bytes[i] >> 4];
          hex += "0123456789abcdef"[bytes[i] & 15];
        }
        return write(1, hex.data(), hex.size()) == static_cast<ssize_t>(hex.size()) ? 0 : 1;
      },
      60);
  if (child.timed_out) return Status::unavailable("the CUDA device query ran past 60 s");
  // The message is the output's tail: a driver may have warned before it.
  const std::size_t size = 2 * sizeof(FactsMessage);
  if (child.exit_code != 0 || child.output.size() < size)
    return Status::unavailable("no CUDA device " + std::to_string(device) + ": " + child.output);
  const std::string hex = child.output.substr(child.output.size() - size);
  FactsMessage m;
  auto* bytes = reinterpret_cast<unsigned char*>(&m);
  auto nibble = [](char c) { return c >= 'a' ? c - 'a' + 10 : c - '0'; };
  if (hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    return Status::unavailable("the CUDA device query answered: " + child.output);
  for (std::size_t i = 0; i < sizeof(m); ++i)
    bytes[i] = static_cast<unsigned char>(16 * nibble(hex[2 * i]) + nibble(hex[2 * i + 1]));
  GpuFacts facts;
  facts.name = m.name;
  facts.arch = "sm_" + std::to_string(m.major) + std::to_string(m.minor);
  facts.sm_count = m.sms;
  facts.max_threads_per_block = m.threads;
  facts.max_shared_memory_per_block = m.shared;
  facts.max_registers_per_block = m.registers;
  facts.warp_size = m.warp;
  facts.memory_bytes = static_cast<std::int64_t>(m.memory);
  return facts;
}

}  // namespace tcl::measure
