// daemon/onboarding_metrics.h — onboarding progress per platform as gauges,
// read from the database by refresh(), which tcld calls on a timer
// (daemon/gauge_refresher.h), never per scrape (so every replica reports the
// same numbers, whichever one took the uploads). The platform label is
// api::name_label's: the name only with --metrics-names.
//   tcld_onboarding_candidates{platform}          programs in the candidate pool
//   tcld_onboarding_measurements{platform}        measurements stored (failed included)
//   tcld_onboarding_sample_requests{platform}     rounds asked for (cancelled left out)
//   tcld_onboarding_items_to_measure{platform}    items of open requests not measured yet
// One statement per refresh (registry::SampleStore::onboarding_counts).
//
// Thread-safe (refresh() may run on two threads at once). Does not own the
// registry or the store; both must outlive this object.
#pragma once

#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "registry/sample_store.h"

namespace tcl::daemon {

class OnboardingGauges {
 public:
  // `names`: platform names as label values (else api::name_label's hashes).
  OnboardingGauges(prometheus::Registry& registry, registry::SampleStore& samples, bool names);
  // Reads the counts and sets the gauges; on a database error the gauges
  // keep their last values (the scrape still answers) and the error is logged.
  void refresh();

 private:
  registry::SampleStore& samples_;
  const bool names_;
  prometheus::Family<prometheus::Gauge>& candidates_;
  prometheus::Family<prometheus::Gauge>& measurements_;
  prometheus::Family<prometheus::Gauge>& sample_requests_;
  prometheus::Family<prometheus::Gauge>& to_measure_;
};

}  // namespace tcl::daemon
