#include "measure/candidates.h"

#include <ctime>
#include <set>

#include "measure/schedule.h"
#include "measure/schedule_gpu.h"

namespace tcl::measure {

std::vector<core::Record> workload_candidates(const Workload& w, int count, std::uint64_t seed,
                                              const HardwareInfo& hw) {
  std::vector<core::Record> out;
  const std::string key = encode_workload_key(w);
  // Each workload gets its own stream, so adding a task never changes the others.
  std::uint64_t h = seed;
  for (char c : key) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  core::SplitMix64 rng(h);
  std::set<std::string> seen;
  const double now = static_cast<double>(std::time(nullptr));
  const bool cuda = hw.is_cuda();
  if (cuda && !gpu_supported(w)) return out;
  const GpuLimits limits = cuda ? gpu_limits(hw.params) : GpuLimits{};
  for (int attempt = 0; attempt < 50 * count && static_cast<int>(out.size()) < count; ++attempt) {
    core::Record r;
    r.steps = cuda ? to_gpu_steps(w, sample_gpu_schedule(w, limits, rng))
                   : to_steps(w, sample_schedule(w, hw.vector_lanes(), rng));
    std::string text;
    core::write_steps(r.steps, &text);
    if (!seen.insert(text).second) continue;
    r.workload_key = key;
    r.target = hw.target;
    r.hardware_params = hw.params;
    r.costs = {0.0};
    r.timestamp = now;
    r.version = std::string(core::kRecordVersion);
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<core::Record>> generate_candidates(std::string_view model, int per_task, std::uint64_t seed,
                                                      const HardwareInfo& hw) {
  auto tasks = model_tasks(model);
  if (!tasks) return tasks.status();
  std::vector<core::Record> out;
  for (const Task& t : *tasks) {
    auto c = workload_candidates(t.workload, per_task, seed, hw);
    out.insert(out.end(), std::make_move_iterator(c.begin()), std::make_move_iterator(c.end()));
  }
  return out;
}

}  // namespace tcl::measure
