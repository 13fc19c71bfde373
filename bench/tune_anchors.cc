#include "bench/tune_anchors.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "core/record.h"

namespace tcl::bench {
namespace {

using measure::OpKind;
using measure::Workload;

template <class F>
double median_seconds(F&& f) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// LibTorch's time for the operator of `w` (the same math as tcl.* workloads).
double libtorch_seconds(const Workload& w) {
  torch::NoGradGuard no_grad;
  const auto& a = w.args;
  const auto f32 = torch::kFloat32;
  switch (w.kind) {
    case OpKind::kMatmul: {
      auto x = torch::randn({a[0], a[2]}, f32), y = torch::randn({a[2], a[1]}, f32);
      return median_seconds([&] { (void)torch::mm(x, y); });
    }
    case OpKind::kBatchMatmul: {
      auto x = torch::randn({a[0], a[1], a[3]}, f32), y = torch::randn({a[0], a[3], a[2]}, f32);
      return median_seconds([&] { (void)torch::bmm(x, y); });
    }
    case OpKind::kConv2d: {  // N, H, W, CI, CO, KH, KW, stride, pad
      auto x = torch::randn({a[0], a[3], a[1], a[2]}, f32).contiguous(torch::MemoryFormat::ChannelsLast);
      auto k = torch::randn({a[4], a[3], a[5], a[6]}, f32).contiguous(torch::MemoryFormat::ChannelsLast);
      return median_seconds([&] { (void)torch::conv2d(x, k, {}, a[7], a[8]); });
    }
    case OpKind::kDepthwiseConv2d: {  // N, H, W, C, KH, KW, stride, pad
      auto x = torch::randn({a[0], a[3], a[1], a[2]}, f32).contiguous(torch::MemoryFormat::ChannelsLast);
      auto k = torch::randn({a[3], 1, a[4], a[5]}, f32).contiguous(torch::MemoryFormat::ChannelsLast);
      return median_seconds([&] { (void)torch::conv2d(x, k, {}, a[6], a[7], 1, a[3]); });
    }
    case OpKind::kSoftmax: {
      auto x = torch::randn({a[0], a[1]}, f32);
      return median_seconds([&] { (void)torch::softmax(x, 1); });
    }
  }
  return NAN;
}

// FLOP/s of LibTorch's 2048³ product: the sustained peak.
double peak_flops() {
  auto x = torch::randn({2048, 2048}), y = torch::randn({2048, 2048});
  return 2 * 2048.0 * 2048.0 * 2048.0 / median_seconds([&] { (void)torch::mm(x, y); });
}

// model → workload key → best mean cost over the runs (seeds) of that model.
std::map<std::string, std::map<std::string, double>> best_of_runs(const std::string& network, const std::string& dir) {
  std::map<std::string, std::map<std::string, double>> best;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(network + "-", 0) != 0) continue;
    const std::string model = name.substr(network.size() + 1, name.rfind("-s") - network.size() - 1);
    std::ifstream in(entry.path() / "best.jsonl");
    for (std::string line; std::getline(in, line);) {
      auto r = core::parse_record(line);
      if (!r || r->error_no != 0) continue;
      double& b = best[model].try_emplace(r->workload_key, INFINITY).first->second;
      b = std::min(b, core::mean_cost(*r));
    }
  }
  return best;
}

}  // namespace

bool print_anchors(const std::string& network, const std::vector<measure::Task>& tasks, const std::string& runs_dir) {
  torch::set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
  const auto best = best_of_runs(network, runs_dir);
  const double peak = peak_flops();
  std::printf("%s on this CPU: LibTorch FP32, %u threads; roofline peak (LibTorch's 2048^3 mm) %.1f GFLOP/s\n\n",
              network.c_str(), std::thread::hardware_concurrency(), peak / 1e9);
  std::printf("| task | weight | LibTorch ms | roofline ms |");
  for (const auto& [model, _] : best) std::printf(" %s ms (÷ LibTorch) |", model.c_str());
  std::printf("\n|---|---|---|---|");
  for (std::size_t i = 0; i < best.size(); ++i) std::printf("---|");
  std::printf("\n");
  double torch_sum = 0, roof_sum = 0;
  std::map<std::string, double> model_sum;
  for (const measure::Task& t : tasks) {
    const std::string key = measure::encode_workload_key(t.workload);
    const double lt = libtorch_seconds(t.workload), roof = measure::flop_count(t.workload) / peak;
    torch_sum += t.weight * lt;
    roof_sum += t.weight * roof;
    std::printf("| `%s` | %d | %.4f | %.4f |", key.c_str(), t.weight, lt * 1e3, roof * 1e3);
    for (const auto& [model, by_key] : best) {
      const auto it = by_key.find(key);
      const double b = it == by_key.end() ? NAN : it->second;
      model_sum[model] += t.weight * b;
      std::printf(" %.4f (%.2fx) |", b * 1e3, b / lt);
    }
    std::printf("\n");
  }
  std::printf("| network | | %.3f | %.3f |", torch_sum * 1e3, roof_sum * 1e3);
  for (const auto& [model, sum] : model_sum) std::printf(" %.3f (%.2fx) |", sum * 1e3, sum / torch_sum);
  std::printf("\n");
  return true;
}

}  // namespace tcl::bench
