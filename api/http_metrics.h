// api/http_metrics.h — request metrics of the HTTP server, by route template
// (never by raw path, so a scan of random URLs cannot grow the series).
//   tcld_http_requests_total{route,method,code}
//   tcld_http_request_duration_seconds{route,method}  (histogram)
//   tcld_http_requests_in_flight
//   tcld_http_connections_cut_total{reason}   closed by a timeout or rate rule
//   tcld_http_busy_total{lane}                answered 503: the lane was full
//   tcld_http_stream_slots_in_use             handlers on the stream lane
//   tcld_http_connections_open                connections held now
//   tcld_http_connections_refused_total{reason}  closed at accept (api/admission.h)
//   tcld_http_auth_throttled_total            answered 429: too many failed tokens from one address
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
  prometheus::Gauge& stream_slots_in_use() { return stream_slots_; }
  // reason: min_request_body_rate | min_response_rate | read_timeout |
  // write_timeout | idle_timeout. lane: stream.
  void connection_cut(const std::string& reason);
  void busy(const std::string& lane);
  prometheus::Gauge& connections_open() { return connections_open_; }
  // reason: max_connections | max_connections_per_address | accept_error.
  void connection_refused(const std::string& reason);
  void auth_throttled() { auth_throttled_.Increment(); }

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Gauge& in_flight_;
  prometheus::Family<prometheus::Counter>& cut_;
  prometheus::Family<prometheus::Counter>& busy_;
  prometheus::Gauge& stream_slots_;
  prometheus::Gauge& connections_open_;
  prometheus::Family<prometheus::Counter>& refused_;
  prometheus::Counter& auth_throttled_;
};

}  // namespace tcl::api
