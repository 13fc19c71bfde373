#include "daemon/onboarding_metrics.h"

#include <spdlog/spdlog.h>

#include "api/metrics.h"

namespace tcl::daemon {

OnboardingGauges::OnboardingGauges(prometheus::Registry& registry, registry::SampleStore& samples, bool names)
    : samples_(samples), names_(names), candidates_(api::gauge_family(registry, "tcld_onboarding_candidates",
                                                                      "Programs in the platform's candidate pool.")),
      measurements_(api::gauge_family(registry, "tcld_onboarding_measurements",
                                      "Measurements stored for the platform, failed ones included.")),
      sample_requests_(api::gauge_family(registry, "tcld_onboarding_sample_requests",
                                         "Sample requests (rounds) made for the platform, cancelled ones left out.")),
      to_measure_(api::gauge_family(registry, "tcld_onboarding_items_to_measure",
                                    "Programs picked by the platform's open sample requests and not measured yet "
                                    "(as of each request's last refresh).")) {}

void OnboardingGauges::refresh() {
  auto counts = samples_.onboarding_counts();
  if (!counts) {
    spdlog::warn("metrics: onboarding counts not read: {}", counts.status().to_string());
    return;
  }
  for (const registry::OnboardingCounts& c : *counts) {
    const prometheus::Labels labels{{"platform", api::name_label(c.platform, names_)}};
    candidates_.Add(labels).Set(static_cast<double>(c.candidates));
    measurements_.Add(labels).Set(static_cast<double>(c.measurements));
    sample_requests_.Add(labels).Set(static_cast<double>(c.sample_requests));
    to_measure_.Add(labels).Set(static_cast<double>(c.to_measure));
  }
}

}  // namespace tcl::daemon
