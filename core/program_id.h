// core/program_id.h — program identity (DESIGN §2). A program is
// (workload_key, steps); the target is not part of it, so one program measured
// on two platforms has one id.
//
// Canonical form (version 1, never change it: ids are stored):
//   "tcl-program-v1\n" + canonical_workload_key + "\n" + steps
// where steps is the compact JSON array written by write_steps() (no
// whitespace, integers in decimal, TVM field order). Formatting of the input
// line therefore never matters. (Before the parser rejected unknown step
// kinds, such a step entered the form as its compact JSON; ids stored then
// stay valid, none of that form is made now.)
// The id is the lower-case hex SHA-256 of that text (64 characters): SHA-256
// is already a dependency (core/sha256.h), collisions are a non-issue at any
// table size, and hashing costs ~1 µs per record, far below parsing.
//
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/record.h"

namespace tcl::core {

inline constexpr std::size_t kProgramIdSize = 64;

// The workload key with whitespace outside JSON string literals removed:
// "[\"abc\", 1, [2, 3]]" and "[\"abc\",1,[2,3]]" give the same key. Used for
// program ids and for grouping records by task (labels).
std::string canonical_workload_key(std::string_view workload_key);

// Appends the canonical program text to *out.
void canonical_program(std::string_view workload_key, std::span<const Step> steps, std::string* out);

// Lower-case hex SHA-256 of the canonical program text.
std::string program_id(std::string_view workload_key, std::span<const Step> steps);
std::string program_id(const Record& r);

}  // namespace tcl::core
