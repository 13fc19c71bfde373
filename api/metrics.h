// api/metrics.h — registering a prometheus-cpp metric family in one call
// (the Build*().Name().Help().Register() block every metric repeated), and
// a family's one unlabelled series. For api/ and daemon/.
// Thread-safety: as prometheus::Registry (registration is locked inside).
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>
#include <string_view>

#include "core/sha256.h"

namespace tcl::api {

inline prometheus::Family<prometheus::Counter>& counter_family(prometheus::Registry& r, const std::string& name,
                                                               const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}
inline prometheus::Family<prometheus::Gauge>& gauge_family(prometheus::Registry& r, const std::string& name,
                                                           const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}
inline prometheus::Family<prometheus::Histogram>& histogram_family(prometheus::Registry& r, const std::string& name,
                                                                   const std::string& help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
}

// The family's series with no labels.
inline prometheus::Counter& counter(prometheus::Registry& r, const std::string& name, const std::string& help) {
  return counter_family(r, name, help).Add({});
}
inline prometheus::Gauge& gauge(prometheus::Registry& r, const std::string& name, const std::string& help) {
  return gauge_family(r, name, help).Add({});
}

// The label value /metrics shows for a platform or alias name. /metrics is
// open while GET /v1/platforms needs a token (issue 45, finding 13), so by
// default a name shows as "sha256:" + the first 12 hex digits of its
// SHA-256: stable across replicas and restarts (dashboards still tell
// platforms apart), no name in clear. `names` (tcld --metrics-names): the
// name itself. A hash hides a name from a reader who does not guess it.
inline std::string name_label(std::string_view name, bool names) {
  return names ? std::string(name) : "sha256:" + sha256_hex(name).substr(0, 12);
}

}  // namespace tcl::api
