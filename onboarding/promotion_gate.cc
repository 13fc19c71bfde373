#include "onboarding/promotion_gate.h"

#include <cstdio>

namespace tcl::onboarding {

GateDecision promotion_decision(const std::vector<PlatformComparison>& platforms, double margin) {
  GateDecision d;
  d.promote = true;
  bool saw_new = false;
  char line[256];
  for (const auto& p : platforms) {
    if (!p.teacher_top1 || !p.student_top1) {
      std::snprintf(line, sizeof line, "%s: no evaluation data, not compared", p.platform.c_str());
      d.reasons.emplace_back(line);
      if (p.is_new) {
        d.promote = false;  // nothing shows the new platform was learned
        d.reasons.back() += " (the new platform must show it was learned)";
      }
      saw_new |= p.is_new;
      continue;
    }
    const double t = *p.teacher_top1, s = *p.student_top1;
    if (p.is_new) {
      saw_new = true;
      const bool ok = s > t;
      std::snprintf(line, sizeof line, "%s (new): top-1 %.4f vs the teacher's zero-shot %.4f: %s", p.platform.c_str(),
                    s, t, ok ? "learned" : "not better than zero-shot");
      d.promote &= ok;
    } else {
      const bool ok = s >= t - margin;
      std::snprintf(line, sizeof line, "%s: top-1 %.4f vs the teacher's %.4f (margin %.4f): %s", p.platform.c_str(), s,
                    t, margin, ok ? "kept" : "forgot");
      d.promote &= ok;
    }
    d.reasons.emplace_back(line);
  }
  if (!saw_new) {
    d.promote = false;
    d.reasons.emplace_back("no new platform among the compared ones");
  }
  return d;
}

}  // namespace tcl::onboarding
