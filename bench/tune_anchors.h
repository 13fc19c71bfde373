// bench/tune_anchors.h — the physical anchors of issue 47's study on this
// CPU: per task of a network, the best program each tuning run found
// (DIR/NETWORK-MODEL-sSEED/best.jsonl) against LibTorch doing the same
// operator on the same machine (FP32, every core, channels-last
// convolutions; the median of 20 timed calls after 3 warm-ups) and against
// the roofline: FLOPs ÷ the peak, where the peak is LibTorch's own best
// rate on a 2048³ matrix product here (what this machine sustains, not its
// datasheet). Prints a markdown table and the network's sums.
#pragma once

#include <string>
#include <vector>

#include "measure/operators.h"

namespace tcl::bench {

bool print_anchors(const std::string& network, const std::vector<measure::Task>& tasks, const std::string& runs_dir);

}  // namespace tcl::bench
