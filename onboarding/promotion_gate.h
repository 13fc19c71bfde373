// onboarding/promotion_gate.h — whether a distilled version takes over
// `production` (DESIGN §5, issue "promotion gate"): it must not lose more
// than `margin` top-1 on any old platform against its teacher, and it must
// beat the teacher's zero-shot top-1 on the new platform. Metrics are the
// evaluation splits' top-1 (mean over tasks), measured on the same data for
// both models. A platform without metrics (no evaluation data) does not
// block promotion but is named in the reasons.
// Pure function; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tcl::onboarding {

struct PlatformComparison {
  std::string platform;
  bool is_new = false;                 // the platform being onboarded
  std::optional<double> teacher_top1;  // nullopt: no evaluation data
  std::optional<double> student_top1;
};

struct GateDecision {
  bool promote = false;
  std::vector<std::string> reasons;  // one line per platform: what was compared and the verdict
};

GateDecision promotion_decision(const std::vector<PlatformComparison>& platforms, double margin);

}  // namespace tcl::onboarding
