#include "onboarding/split.h"

#include <utility>
#include <vector>

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

PlatformSplit validation_split(PlatformSplit split, double fraction, std::uint64_t salt) {
  PlatformSplit out;
  out.measured = split.measured;
  out.pool_duplicates = split.pool_duplicates;
  constexpr std::int32_t kValidation = -1;
  std::vector<std::int32_t> renumbered(split.task_keys.size(), kValidation);
  for (std::size_t t = 0; t < split.task_keys.size(); ++t) {
    if (core::in_holdout(split.task_keys[t], fraction, salt)) {
      ++out.holdout_tasks;
    } else {
      renumbered[t] = static_cast<std::int32_t>(out.task_keys.size());
      out.task_keys.push_back(std::move(split.task_keys[t]));
    }
  }
  for (std::size_t i = 0; i < split.pool.size(); ++i) {
    const std::int32_t t = renumbered[static_cast<std::size_t>(split.task[i])];
    if (t == kValidation) {
      out.holdout.push_back(std::move(split.pool[i]));
    } else {
      out.task.push_back(t);
      out.pool.push_back(std::move(split.pool[i]));
    }
  }
  return out;
}

}  // namespace tcl::onboarding
