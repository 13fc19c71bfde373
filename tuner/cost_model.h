// tuner/cost_model.h — what ranks a task's candidate programs during a
// tuning run (issue 47's `--model` flag):
//
//   random          none: every score is a seeded random number, a function
//                   of the seed, the task and the program (a resumed run
//                   scores as an uninterrupted one);
//   lineage         the lineage's model for the platform, as given by the
//                   caller (tcld's POST /v1/predict, or a checkpoint's fast
//                   path); it never learns during the run;
//   online          a gradient-boosted tree model (XGBoost, as Ansor's
//                   default) trained on this run's measurements alone, one
//                   per task, retrained after each of the task's rounds;
//                   random scores until the task has kMinTrainingPrograms;
//   lineage+online  the lineage's scores, calibrated to the task's measured
//                   throughputs by least squares, as the base margin of an
//                   online model of the run's residuals: the lineage's prior,
//                   corrected by what this run measured.
//
// Scores: higher is faster; the search compares them across its calls of one
// round (between learn() calls) and scores each program once a round.
// Training target (online models): a program's throughput normalized by its
// task's best, best_seconds / seconds in (0, 1]; failed programs 0.
//
// Thread-safety: a CostModel is used by one tuning run's thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/record.h"
#include "core/status.h"
#include "tuner/space.h"

namespace tcl::tuner {

// The lineage's scores of unmeasured records of one task (higher = faster).
using LineageScorer = std::function<Result<std::vector<double>>(std::span<const core::Record> records)>;

// An online model needs this many measured programs of a task (valid or
// not) before it replaces random scores.
inline constexpr std::size_t kMinTrainingPrograms = 8;

class CostModel {
 public:
  virtual ~CostModel() = default;
  // The names above.
  virtual std::string_view name() const = 0;
  // Scores of `points` of task `task` (its index in the network).
  virtual Result<std::vector<double>> score(std::size_t task, const Space& space, std::span<const Point> points) = 0;
  // Every measurement of `task` so far: `seconds[i]` is points[i]'s mean
  // cost, or a negative value when it failed. Each call replaces the last.
  virtual Status learn(std::size_t task, const Space& space, std::span<const Point> points,
                       std::span<const double> seconds) = 0;
  // Whether scores carry information (false for `random`): the search
  // evolves only with a model that does.
  virtual bool informed() const { return true; }
};

// `name` is one of "random", "lineage", "online", "lineage+online";
// `lineage` is needed by the two that say so (kInvalidArgument without it,
// or for another name). `seed` drives every random score.
Result<std::unique_ptr<CostModel>> make_cost_model(std::string_view name, LineageScorer lineage, std::uint64_t seed);

// The names make_cost_model accepts.
std::vector<std::string_view> cost_model_names();

// Whether the model `name` scores with the lineage ("lineage", "lineage+online").
bool uses_lineage(std::string_view name);

}  // namespace tcl::tuner
