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

}  // namespace tcl::api
