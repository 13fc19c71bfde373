// onboarding/split.h — the evaluation protocol's split of one platform's
// records (DESIGN §10; bench_onboarding and bench_continual): measured
// records only (core::classify); the tasks for which core::in_holdout(
// canonical key, holdout, salt) holds are the held-out split (every measured
// record of them: scored, never trained on); the measured records of the
// other tasks form the pool, one per program (core::program_id; a program's
// later records dropped), its tasks numbered in order of first appearance.
//
// Records are added one at a time (a file need not be held twice). Not
// thread-safe; plain C++.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/record.h"

namespace tcl::onboarding {

struct PlatformSplit {
  std::vector<core::Record> pool;      // measured, one per program, tasks not held out
  std::vector<std::int32_t> task;      // per pool record, into task_keys
  std::vector<std::string> task_keys;  // canonical workload keys of the pool's tasks
  std::vector<core::Record> holdout;   // every measured record of the held-out tasks
  std::int64_t holdout_tasks = 0;
  std::int64_t measured = 0;         // measured records seen
  std::int64_t pool_duplicates = 0;  // pool records dropped as a program seen before
};

class SplitBuilder {
 public:
  // keep_pool false: the held-out split only (the pool is neither kept nor counted).
  SplitBuilder(double holdout, std::uint64_t salt, bool keep_pool = true)
      : holdout_(holdout), salt_(salt), keep_pool_(keep_pool) {}

  // Takes `r` (moved from, left empty) when it joins the pool or the held-out split.
  void add(core::Record& r);
  // The split so far; the builder starts empty again.
  PlatformSplit take();

 private:
  double holdout_;
  std::uint64_t salt_;
  bool keep_pool_;
  PlatformSplit split_;
  std::unordered_set<std::string> seen_, held_;
  std::unordered_map<std::string, std::int32_t> task_index_;
};

// DESIGN §10's validation split, for choosing settings without looking at
// the held-out tasks: `split`'s held-out split is dropped, and the pool's
// tasks with core::in_holdout(key, fraction, salt) become the held-out split
// instead (their pool records: one per program); the other tasks stay the
// pool, renumbered in their order. measured and pool_duplicates are kept.
PlatformSplit validation_split(PlatformSplit split, double fraction, std::uint64_t salt);

}  // namespace tcl::onboarding
