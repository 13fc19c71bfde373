#include "measure/codegen_cuda.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "measure/process.h"
#include "measure/reference.h"

namespace tcl::measure {
namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(CodegenCudaTest, KernelStructureAndLaunchFollowTheSchedule) {
  const Workload w{OpKind::kConv2d, {1, 56, 56, 64, 64, 3, 3, 1, 1}};
  core::SplitMix64 rng(9);
  for (int i = 0; i < 20; ++i) {
    const GpuSchedule s = sample_gpu_schedule(w, GpuLimits{}, rng);
    const GpuShape g = gpu_shape(w, s);
    const CudaKernel k = generate_cuda_kernel(w, s, "conv_" + std::to_string(i));
    EXPECT_EQ(k.symbol, "conv_" + std::to_string(i));
    EXPECT_EQ(count(k.source, "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(g.threads) +
                                  ") conv_" + std::to_string(i) + "("),
              1)
        << k.source;
    EXPECT_EQ(count(k.source, "__shared__ float in0_shared[" + std::to_string(g.shared_floats[0]) + "];"), 1);
    EXPECT_EQ(count(k.source, "__shared__ float in1_shared[" + std::to_string(g.shared_floats[1]) + "];"), 1);
    EXPECT_EQ(count(k.source, "float out_local[" + std::to_string(g.local_floats) + "];"), 1);
    // One barrier before the fetch (the previous tile is consumed) and one after.
    EXPECT_EQ(count(k.source, "__syncthreads();"), 2);
    const auto first = k.source.find("__syncthreads();"), last = k.source.rfind("__syncthreads();");
    EXPECT_LT(first, k.source.find("in0_shared[f] ="));
    EXPECT_GT(last, k.source.find("in1_shared[f] ="));
    EXPECT_LT(last, k.source.find("out_local[", k.source.find("+=") - 20));
    EXPECT_EQ(k.launch.grid[0], g.blocks);
    EXPECT_EQ(k.launch.block[0], g.threads);
    EXPECT_EQ(k.launch.grid[1] * k.launch.grid[2] * k.launch.block[1] * k.launch.block[2], 1);
    EXPECT_EQ(k.launch.static_shared_bytes, 4 * (g.shared_floats[0] + g.shared_floats[1]));
    EXPECT_LE(k.launch.static_shared_bytes, GpuLimits{}.max_shared_memory_per_block);
    EXPECT_EQ(k.launch.dynamic_shared_bytes, 0);
    EXPECT_EQ(count(k.source, "#pragma unroll") > 0,
              s.auto_unroll_max_step > 0 || s.fetch_vector[0] > 1 || s.fetch_vector[1] > 1);
  }
}

TEST(CodegenCudaTest, ModuleHoldsEveryKernelOnce) {
  const Workload w{OpKind::kMatmul, {128, 768, 768}};
  core::SplitMix64 rng(2);
  std::vector<CudaKernel> kernels;
  for (int i = 0; i < 5; ++i)
    kernels.push_back(generate_cuda_kernel(w, sample_gpu_schedule(w, GpuLimits{}, rng), "k" + std::to_string(i)));
  const std::string module = cuda_module_source(kernels);
  EXPECT_EQ(count(module, "__global__"), 5);
  for (const auto& k : kernels) EXPECT_EQ(count(module, " " + k.symbol + "("), 1);
  EXPECT_EQ(count(module, "#include"), 0);  // NVRTC gets no headers
}

// The emulation: the kernels compiled as C++ with CUDA's few names defined,
// each block run with one std::thread per CUDA thread and a std::barrier for
// __syncthreads, then compared with the reference. Tiny shapes keep the
// thread count small; every kind, strides 1 and 2, padding.
constexpr const char* kPrelude = R"(#include <barrier>
#include <thread>
#include <vector>
struct TclDim3 { unsigned x = 0, y = 0, z = 0; };
thread_local TclDim3 threadIdx, blockIdx;
std::barrier<>* tcl_barrier;
#define __global__
#define __shared__ static
#define __launch_bounds__(n)
#define __syncthreads() tcl_barrier->arrive_and_wait()
)";

std::string harness(const CudaKernel& k) {
  const std::string grid = std::to_string(k.launch.grid[0]), block = std::to_string(k.launch.block[0]);
  return "extern \"C\" void emulate_" + k.symbol + "(const float* a, const float* b, float* o) {\n" +
         "  for (unsigned blk = 0; blk < " + grid + "u; ++blk) {\n" + "    std::barrier<> bar(" + block + ");\n" +
         "    tcl_barrier = &bar;\n    std::vector<std::thread> ts;\n" + "    for (unsigned t = 0; t < " + block +
         "u; ++t) ts.emplace_back([=] { blockIdx.x = blk; threadIdx.x = t; " + k.symbol + "(a, b, o); });\n" +
         "    for (auto& th : ts) th.join();\n  }\n}\n";
}

TEST(CodegenCudaTest, EmulatedKernelsMatchTheReference) {
  const Workload workloads[] = {{OpKind::kMatmul, {8, 16, 12}},
                                {OpKind::kBatchMatmul, {2, 8, 4, 8}},
                                {OpKind::kConv2d, {1, 6, 6, 4, 8, 3, 3, 1, 1}},
                                {OpKind::kConv2d, {1, 7, 7, 3, 4, 3, 3, 2, 1}},
                                {OpKind::kConv2d, {2, 4, 4, 8, 4, 1, 1, 1, 0}},
                                {OpKind::kDepthwiseConv2d, {1, 8, 8, 8, 3, 3, 1, 1}},
                                {OpKind::kDepthwiseConv2d, {1, 9, 9, 4, 3, 3, 2, 1}}};
  struct Case {
    Workload w;
    GpuSchedule s;
    CudaKernel k;
  };
  std::vector<Case> cases;
  std::vector<CudaKernel> kernels;
  core::SplitMix64 rng(4);
  for (const auto& w : workloads) {
    for (int i = 0; i < 4; ++i) {
      const GpuSchedule s = sample_gpu_schedule(w, GpuLimits{}, rng);
      cases.push_back({w, s, generate_cuda_kernel(w, s, "kernel_" + std::to_string(cases.size()))});
      kernels.push_back(cases.back().k);
    }
  }
  // The samples cover the schedule's features.
  int vthreads = 0, blocks = 0, vectors = 0, reduce_steps = 0, guarded = 0;
  for (const auto& c : cases) {
    const GpuShape g = gpu_shape(c.w, c.s);
    const CudaLaunch launch = cuda_launch(c.w, c.s);  // what the runner launches with
    EXPECT_EQ(launch.grid[0], c.k.launch.grid[0]);
    EXPECT_EQ(launch.block[0], c.k.launch.block[0]);
    EXPECT_EQ(launch.static_shared_bytes, c.k.launch.static_shared_bytes);
    vthreads += g.vthreads > 1;
    blocks += g.blocks > 1;
    vectors += c.s.fetch_vector[0] > 1 || c.s.fetch_vector[1] > 1;
    reduce_steps += loop_extents(c.w).reduce[0] > g.reduce_tile[0];
    for (int i = 0; i < 2; ++i)  // a fetch whose runs do not fill the last round of threads
      guarded += (g.shared_floats[i] / c.s.fetch_vector[static_cast<std::size_t>(i)]) % g.threads != 0;
  }
  EXPECT_GE(vthreads, 3);
  EXPECT_GE(blocks, 3);
  EXPECT_GE(vectors, 3);
  EXPECT_GE(reduce_steps, 3);
  EXPECT_GE(guarded, 3);
  // A planted bug (the halo of the input tile read one row too low) must be
  // caught: the emulation can fail.
  Case planted = cases[13];  // a stride-2 conv2d
  planted.k = generate_cuda_kernel(planted.w, planted.s, "planted");
  const auto at = planted.k.source.find("const int h = ");
  ASSERT_NE(at, std::string::npos);
  planted.k.source.insert(planted.k.source.find(';', at), " + 1");
  kernels.push_back(planted.k);
  const auto dir = std::filesystem::temp_directory_path() / ("tcl_cuda_emul_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream src(dir / "module.cc");
    src << kPrelude << cuda_module_source(kernels);
    for (const auto& k : kernels) src << harness(k);
  }
  const std::string so = (dir / "module.so").string();
  const auto cmd = run_command(
      {"c++", "-std=c++20", "-O1", "-pthread", "-shared", "-fPIC", (dir / "module.cc").string(), "-o", so}, 300);
  ASSERT_TRUE(cmd.started && !cmd.timed_out && cmd.exit_code == 0) << cmd.output;
  void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  using Fn = void (*)(const float*, const float*, float*);
  for (const auto& c : cases) {
    auto fn = reinterpret_cast<Fn>(dlsym(lib, ("emulate_" + c.k.symbol).c_str()));
    ASSERT_NE(fn, nullptr);
    const auto in = make_inputs(c.w);
    std::vector<float> want(static_cast<std::size_t>(output_size(c.w))), got(want.size(), -7.f);
    reference(c.w, in[0].data(), in[1].data(), want.data());
    fn(in[0].data(), in[1].data(), got.data());
    EXPECT_EQ(compare_outputs(got, want), "") << encode_workload_key(c.w) << "\n" << c.k.source;
  }
  {
    auto fn = reinterpret_cast<Fn>(dlsym(lib, "emulate_planted"));
    ASSERT_NE(fn, nullptr);
    const auto in = make_inputs(planted.w);
    std::vector<float> want(static_cast<std::size_t>(output_size(planted.w))), got(want.size());
    reference(planted.w, in[0].data(), in[1].data(), want.data());
    fn(in[0].data(), in[1].data(), got.data());
    EXPECT_NE(compare_outputs(got, want), "");
  }
  dlclose(lib);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tcl::measure
