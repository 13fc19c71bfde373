// core/task_split.h — splits by whole tasks (DESIGN §10): a task is in a
// held-out split by a fixed hash of its canonical workload key, never by
// record, so no program of a held-out task is ever seen in training.
//
// task_split_hash() equals SQL's tasks.split_hash (tcl_split_hash in
// migrations/0001): the first 8 bytes of SHA-256(key) as a big-endian int64.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace tcl::core {

std::int64_t task_split_hash(std::string_view canonical_workload_key);

// True when the task falls in the held-out `fraction` (0..1) of tasks.
// `salt` picks another, independent split of the same tasks (seeds in §10's
// experiments); salt 0 is the platform's evaluation split.
bool in_holdout(std::string_view canonical_workload_key, double fraction, std::uint64_t salt = 0);

}  // namespace tcl::core
