// onboarding/round.h — one sample-request round (DESIGN §6): which of a
// platform's unmeasured candidates to measure next, with the R/D/U terms of
// each pick. The one implementation behind POST /v1/platforms/{name}/
// sample-requests (api/handlers/sample_requests.cc) and the benches.
//
// run_round() is the workflow: it reads the platform's pool through a
// RoundSource (tcld's: registry_source.h), embeds it, asks the caller for
// the budget and picks. Underneath, a round is built in two calls (a bench
// that picks several budgets from one embedded pool calls them itself):
//   1. RoundPool: the candidates, then the measured programs of the same
//      tasks, streamed in (programs are embedded pass by pass, so a large
//      pool is never held as records). With a student, each candidate gets
//      its embedding and uncertainty from trainer::PoolEmbedder: scored by
//      the platform's active column when there is one (the student is then
//      its reference, so their disagreement joins the uncertainty), else by
//      the student under this platform's descriptor and the others'. The
//      measured programs count as already selected for Diversity. Without a
//      student (strategy random) nothing is embedded.
//   2. select_round: sampler::select over that pool for a budget.
// Task indices are the caller's (how it numbers the platform's tasks shapes
// the order of the picks: sampler::select returns them by task index).
//
// Not thread-safe (one round per object); torch-free header.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/record.h"
#include "core/status.h"
#include "sampler/rdu.h"
#include "trainer/pool_embedding.h"

namespace tcl::onboarding {

// The models a round scores with (not owned; they outlive the round).
struct RoundModels {
  trainer::ServedModel student;            // model == nullptr: none (no embedding)
  trainer::ServedModel column;             // the platform's active column, or empty
  std::vector<float> descriptor;           // this platform's (core::kHardwareDim floats)
  std::vector<std::vector<float>> others;  // of the platforms the student covers besides this one
};

// How the sampler picks (sampler::SampleOptions without the budget).
struct RoundOptions {
  sampler::Strategy strategy = sampler::kDefaultStrategy;
  sampler::Weights weights;
  std::uint64_t seed = 0;  // the sampler's tie-breaks and random draws
  int min_per_task = 2;
  double random_share = 0.0;                  // sampler::SampleOptions::random_share, in [0, 1]
  const std::atomic<bool>* cancel = nullptr;  // sampler::SampleOptions::cancel (not owned)
};

class RoundPool {
 public:
  // `embedding`: MC samples and seed of the embedder (unused without a student).
  RoundPool(const RoundModels& models, trainer::PoolEmbeddingOptions embedding);

  // A candidate of task `task` (>= 0). All candidates come before the first
  // add_measured(). Errors: the embedder's.
  Status add_candidate(std::int32_t task, std::span<const core::Step> steps);
  // A measured program of a task of the pool (Diversity only; never picked).
  Status add_measured(std::int32_t task, std::span<const core::Step> steps);
  // Ends the pool: `num_tasks` > every task index given. Call once, before select_round.
  Status finish(std::int32_t num_tasks);

  std::int64_t size() const { return static_cast<std::int64_t>(task_.size()); }  // candidates
  bool embedded() const { return embedder_.has_value(); }                        // false: no student (random)
  std::int64_t dim() const { return dim_; }  // embedding width (1 when not embedded)

 private:
  friend Result<std::vector<sampler::Pick>> select_round(const RoundPool&, std::int64_t, const RoundOptions&);
  Status end_candidates();

  std::optional<trainer::PoolEmbedder> embedder_;
  bool candidates_done_ = false;
  std::int64_t dim_ = 1;
  std::int32_t num_tasks_ = 0;
  std::vector<std::int32_t> task_, measured_task_;
  std::vector<float> embeddings_, uncertainty_, predicted_, measured_embeddings_;
};

// ceil(fraction · pool), at least 1: the budget a "fraction" asks for.
std::int64_t budget_of_fraction(double fraction, std::int64_t pool);

// `budget` candidates of a finished pool (sampler::select: Pick::index is the
// candidate's position in add order). Errors: sampler::select's
// (kInvalidArgument naming the parameter), e.g. budget > pool.size().
Result<std::vector<sampler::Pick>> select_round(const RoundPool& pool, std::int64_t budget,
                                                const RoundOptions& options);

// A record a source streams, parsed on first need (most of a pool's
// records are only counted or skipped).
class SourceRecord {
 public:
  virtual ~SourceRecord() = default;
  // The record; nullptr when it does not parse (a source's upload checks
  // make that rare; such a record is skipped).
  virtual const core::Record* get() = 0;
};

// What a round reads of one platform.
class RoundSource {
 public:
  virtual ~RoundSource() = default;
  // Every measurement of the platform (failed ones too) with its program
  // id; `sink` returning false stops the read (OK).
  virtual Status measured(const std::function<bool(const std::string& program_id, SourceRecord& record)>& sink) = 0;
  // Programs picked by open rounds and not measured yet: not offered again.
  virtual Result<std::unordered_set<std::string>> pending() = 0;
  // Every candidate of the platform with its program id (measured ones
  // too); `sink` returning false stops the read (OK).
  virtual Status candidates(const std::function<bool(const std::string& program_id, SourceRecord& record)>& sink) = 0;
};

// A round as asked.
struct RoundRequest {
  // The budget for a pool of `pool_size` candidates (budget_of_fraction for
  // a fraction), or nullopt to refuse the round (the caller says why).
  std::function<std::optional<std::int64_t>(std::int64_t pool_size)> budget;
  RoundOptions options;                     // options.cancel also stops the read
  trainer::PoolEmbeddingOptions embedding;  // MC samples and seed (unused without a student)
};

// A round as run: what was read, and the picks.
struct Round {
  // The pool in pick-index order: each candidate's program id, and the task
  // keys (workload keys, numbered in order of first appearance).
  std::vector<std::string> program_ids;
  std::vector<std::string> task_keys;
  std::size_t measured = 0;  // distinct programs measured on the platform
  std::int64_t budget = 0;   // 0: refused by RoundRequest::budget (no picks)
  std::vector<sampler::Pick> picks;
  std::chrono::steady_clock::time_point embedded_at, selected_at;  // when the pool was ready; picked
};

// One round (DESIGN §6): the platform's candidates that are neither
// measured nor pending in another round, embedded as RoundPool does (tasks
// numbered in order of first appearance), then the measured programs of the
// pool's tasks (Diversity), then the budget and select_round. `*round` is
// filled as the steps go, so that an error can be reported with what was
// read (the pool's size and tasks). kCancelled when options.cancel turned
// true during the read; the source's, the embedder's and select_round's
// errors.
Status run_round(RoundSource& source, const RoundModels& models, const RoundRequest& request, Round* round);

}  // namespace tcl::onboarding
