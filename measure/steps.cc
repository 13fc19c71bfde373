#include "measure/steps.h"

#include <exception>
#include <numeric>
#include <string>
#include <utility>

namespace tcl::measure::steps {

std::vector<std::int64_t> divisors(std::int64_t n, std::int64_t limit) {
  std::vector<std::int64_t> d;
  for (std::int64_t i = 1; i <= n && i <= limit; ++i) {
    if (n % i == 0) d.push_back(i);
  }
  return d;
}

std::int64_t pick(const std::vector<std::int64_t>& v, core::SplitMix64& rng) { return v[rng.below(v.size())]; }

std::vector<std::int32_t> range(int first, int n) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

core::Step make(core::StepKind kind, int stage) {
  core::Step st;
  st.kind = kind;
  st.stage_id = stage;
  return st;
}

core::Step split(int stage, int iter, std::int64_t extent, std::vector<std::int64_t> lengths) {
  core::Step st = make(core::StepKind::kSplit, stage);
  st.iter_id = iter;
  st.extent = extent;
  st.lengths = std::move(lengths);
  st.inner_to_outer = true;
  return st;
}

core::Step annotate(int stage, int iter, core::Annotation a) {
  core::Step st = make(core::StepKind::kAnnotation, stage);
  st.iter_id = iter;
  st.annotation = static_cast<std::int32_t>(a);
  return st;
}

core::Step ids_step(core::StepKind kind, int stage, std::vector<std::int32_t> ids) {
  core::Step st = make(kind, stage);
  st.ids = std::move(ids);
  return st;
}

core::Step compute_at(int stage, int target_stage, int target_iter) {
  core::Step st = make(core::StepKind::kComputeAt, stage);
  st.target_stage_id = target_stage;
  st.target_iter_id = target_iter;
  return st;
}

core::Step unroll_pragma(int stage, int max_step) {
  core::Step st = make(core::StepKind::kPragma, stage);
  st.pragma_type = std::string(kUnrollPragma) + std::to_string(max_step);
  return st;
}

Result<int> unroll_limit(const core::Step& pragma) {
  if (!pragma.pragma_type.starts_with(kUnrollPragma)) {
    return Status::invalid_argument("unknown pragma " + pragma.pragma_type);
  }
  try {
    return std::stoi(pragma.pragma_type.substr(kUnrollPragma.size()));
  } catch (const std::exception&) {
    return Status::invalid_argument("bad pragma value " + pragma.pragma_type);
  }
}

}  // namespace tcl::measure::steps
