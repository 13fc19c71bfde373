// api/http_metrics.h — request metrics of the HTTP server, by route template
// (never by raw path, so a scan of random URLs cannot grow the series).
//   tcld_http_requests_total{route,method,code}
//   tcld_http_request_duration_seconds{route,method}  (histogram)
//   tcld_http_requests_in_flight
// Thread-safe. Does not own the registry; it must outlive this object.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>

namespace tcl::api {

class HttpMetrics {
 public:
  explicit HttpMetrics(prometheus::Registry& registry);
  void observe(const std::string& route, const std::string& method, int code, double seconds);
  prometheus::Gauge& in_flight() { return in_flight_; }

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Gauge& in_flight_;
};

}  // namespace tcl::api
