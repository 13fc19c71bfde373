// tuner/space.h — one task's search space as the tuner sees it: sample a
// program from the sketch, mutate one, spell it as TVM steps, and describe it
// as a fixed-length feature vector for the online model. Both of measure/'s
// sketches sit behind it: the CPU one (measure/schedule.h) for an llvm
// target, the GPU one (measure/schedule_gpu.h, within the device's limits)
// for a cuda target.
//
// Mutations are the ones Ansor's evolutionary search applies to a state:
//   tile size      move one prime factor of a loop between two of its split
//                  levels (the outermost level is the rest of the extent);
//   unroll         another auto_unroll_max_step;
//   parallel       CPU: another count of fused parallel outer levels;
//   vectorize      CPU: on / off;
//   location       CPU: the cache write on / off (compute_at of the local
//                  stage), the padding stage inlined / at root; softmax:
//                  exp inlined, reductions at the row;
//   order          CPU: swap two spatial or two reduction loops of a level;
//   fetch          GPU: another vector length of a cooperative fetch.
// Every mutation yields a valid point (validate / validate_gpu) different
// from its parent, or nothing when none of a few attempts did.
//
// Thread-safety: a Space is immutable after construction; every method is
// const and takes the caller's generator.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/random.h"
#include "core/record.h"
#include "core/status.h"
#include "measure/hardware.h"
#include "measure/operators.h"
#include "measure/schedule.h"
#include "measure/schedule_gpu.h"

namespace tcl::tuner {

// A program of one task: a point of the CPU or of the GPU sketch.
using Point = std::variant<measure::Schedule, measure::GpuSchedule>;

class Space {
 public:
  // The space of `workload` on `hw` (its target picks the sketch).
  // kInvalidArgument when the target's sketch does not cover the workload
  // (softmax on cuda).
  static Result<Space> create(const measure::Workload& workload, const measure::HardwareInfo& hw);

  const measure::Workload& workload() const { return workload_; }
  bool is_gpu() const { return gpu_; }

  Point sample(core::SplitMix64& rng) const;
  // A valid neighbour of `p`, or nullopt when no attempt found one.
  std::optional<Point> mutate(const Point& p, core::SplitMix64& rng) const;
  Status validate(const Point& p) const;

  std::vector<core::Step> steps(const Point& p) const;
  // The program as an unmeasured record of this task (costs [0], the
  // target and hardware params of `hw`).
  core::Record record(const Point& p) const;
  // The inverse of steps(); kInvalidArgument for steps of another space.
  Result<Point> decode(const std::vector<core::Step>& steps) const;
  // A canonical text of the program (its steps), to never measure one twice.
  std::string key(const Point& p) const;

  // The online model's view of a program: log2 tile lengths per level,
  // loop positions, flags, and the derived sizes that set its speed
  // (parallel extent, vector length, local and shared buffer sizes,
  // threads and blocks). Same length for every point of this space.
  std::vector<float> features(const Point& p) const;

 private:
  Space(measure::Workload w, measure::HardwareInfo hw, bool gpu);
  measure::Workload workload_;
  measure::HardwareInfo hw_;
  bool gpu_ = false;
  measure::GpuLimits limits_;
  std::string key_;  // the workload key
};

}  // namespace tcl::tuner
