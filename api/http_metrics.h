// api/http_metrics.h — the metric families api/ defines, in one place (names
// and help in http_metrics.cc; api/metrics.h has the registration helpers).
//
// The server's (HttpMetrics), by route template (never by raw path, so a scan
// of random URLs cannot grow the series):
//   tcld_http_requests_total{route,method,code}
//   tcld_http_request_duration_seconds{route,method}  (histogram)
//   tcld_http_requests_in_flight
//   tcld_http_connections_cut_total{reason}   closed by a timeout or rate rule
//   tcld_http_busy_total{lane}                answered 503: the lane was full
//   tcld_http_stream_slots_in_use             handlers on the stream lane
//   tcld_http_connections_open                connections held now
//   tcld_http_connections_refused_total{reason}  closed at accept (api/admission.h)
//   tcld_http_auth_throttled_total            answered 429: too many failed tokens from one address
// The handlers' (each registers its families once, at route set-up):
//   tcld_predict_programs_total, tcld_predict_batch_size (histogram),
//   tcld_predict_model_seconds_total                       PredictMetrics
//   tcld_v2_infer_programs_total, tcld_v2_infer_model_seconds_total   InferMetrics
//   tcld_uploads_total{kind,outcome}, tcld_upload_lines_total{kind,result},
//   tcld_upload_rejected_lines_total{kind,reason}, tcld_upload_bytes_total{kind}
//                                                          UploadKindMetrics
// (The sample-request families are still defined in handlers/sample_requests.cc.)
// Thread-safe. Does not own the registry; it must outlive these objects.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>
#include <string_view>

#include "core/ingest_rules.h"

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

// POST /v1/predict.
struct PredictMetrics {
  explicit PredictMetrics(prometheus::Registry& registry);
  prometheus::Counter& programs;      // programs scored
  prometheus::Histogram& batch_size;  // programs per request
  prometheus::Counter& seconds;       // parsing, encoding and scoring
};

// POST /v2/models/{name}[/versions/{v}]/infer.
struct InferMetrics {
  explicit InferMetrics(prometheus::Registry& registry);
  prometheus::Counter& programs;  // programs scored
  prometheus::Counter& seconds;   // reading tensors and scoring
};

// The upload counters of one kind ("measurements", "candidates"), resolved
// once so that an upload adds to them without a label lookup.
struct UploadKindMetrics {
  UploadKindMetrics(prometheus::Registry& registry, std::string_view kind);
  // tcld_uploads_total by outcome
  prometheus::Counter *stored, *replayed, *error;
  // tcld_upload_lines_total by result; tcld_upload_bytes_total
  prometheus::Counter *accepted, *duplicate, *rejected, *bytes;
  // tcld_upload_rejected_lines_total by reason, indexed by core::RejectReason
  prometheus::Counter* by_reason[core::kRejectReasons];
};

}  // namespace tcl::api
