// measure/reference.h — the plain-loop reference every generated program is
// checked against (double accumulators), the deterministic inputs, and the
// comparison rule.
//
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "measure/operators.h"

namespace tcl::measure {

// Inputs of `w`, uniform in [-1, 1), the same for every program of `w`.
std::vector<std::vector<float>> make_inputs(const Workload& w);

// out must hold output_size(w) floats; in1 is ignored by softmax.
void reference(const Workload& w, const float* in0, const float* in1, float* out);

// Empty when `got` matches `want` elementwise within a tolerance relative to
// the element and to the mean magnitude of `want` (1e-3); otherwise a short
// description of the first mismatch ("out[12] = 3.5, want 1.25"). NaN never
// matches.
std::string compare_outputs(std::span<const float> got, std::span<const float> want);

}  // namespace tcl::measure
