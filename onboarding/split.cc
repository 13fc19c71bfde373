#include "onboarding/split.h"

#include <utility>

#include "core/program_id.h"
#include "core/task_split.h"

namespace tcl::onboarding {

void SplitBuilder::add(core::Record& r) {
  if (core::classify(r) != core::RecordClass::kMeasured) return;
  ++split_.measured;
  std::string key = core::canonical_workload_key(r.workload_key);
  if (core::in_holdout(key, holdout_, salt_)) {
    held_.insert(key);
    split_.holdout.push_back(std::move(r));
    r = core::Record{};
    return;
  }
  if (!keep_pool_) return;
  if (!seen_.insert(core::program_id(r)).second) {
    ++split_.pool_duplicates;
    return;
  }
  auto [it, added] = task_index_.try_emplace(key, static_cast<std::int32_t>(split_.task_keys.size()));
  if (added) split_.task_keys.push_back(std::move(key));
  split_.task.push_back(it->second);
  split_.pool.push_back(std::move(r));
  r = core::Record{};
}

PlatformSplit SplitBuilder::take() {
  split_.holdout_tasks = static_cast<std::int64_t>(held_.size());
  PlatformSplit out = std::move(split_);
  split_ = PlatformSplit{};
  seen_.clear();
  held_.clear();
  task_index_.clear();
  return out;
}

}  // namespace tcl::onboarding
