#include "api/http_metrics.h"

#include "api/metrics.h"

namespace tcl::api {

HttpMetrics::HttpMetrics(prometheus::Registry& registry)
    : requests_(counter_family(registry, "tcld_http_requests_total",
                               "HTTP requests answered, by route template, method and status code.")),
      duration_(histogram_family(registry, "tcld_http_request_duration_seconds",
                                 "Time from a request's full read to its answer being handed to the socket.")),
      in_flight_(gauge(registry, "tcld_http_requests_in_flight", "Requests read and not yet answered.")),
      cut_(counter_family(registry, "tcld_http_connections_cut_total",
                          "Connections tcld closed because the client was too slow, by rule "
                          "(min_request_body_rate, min_response_rate, read_timeout, write_timeout, idle_timeout).")),
      busy_(counter_family(registry, "tcld_http_busy_total",
                           "Requests answered 503 + Retry-After because their lane had no free slot, by lane.")),
      stream_slots_(gauge(registry, "tcld_http_stream_slots_in_use",
                          "Handlers running on the stream lane (streamed uploads and downloads).")),
      connections_open_(gauge(registry, "tcld_http_connections_open", "Client connections held now.")),
      refused_(counter_family(registry, "tcld_http_connections_refused_total",
                              "Connections closed at accept, by reason (max_connections, "
                              "max_connections_per_address, accept_error: out of file descriptors).")),
      auth_throttled_(counter(registry, "tcld_http_auth_throttled_total",
                              "Requests answered 429 because their address failed authentication too often.")) {}

void HttpMetrics::connection_refused(const std::string& reason) { refused_.Add({{"reason", reason}}).Increment(); }

void HttpMetrics::connection_cut(const std::string& reason) { cut_.Add({{"reason", reason}}).Increment(); }

void HttpMetrics::busy(const std::string& lane) { busy_.Add({{"lane", lane}}).Increment(); }

void HttpMetrics::observe(const std::string& route, const std::string& method, int code, double seconds) {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                                   0.25,   0.5,   1,      2.5,   5,    10,    30};
  requests_.Add({{"route", route}, {"method", method}, {"code", std::to_string(code)}}).Increment();
  duration_.Add({{"route", route}, {"method", method}}, kBuckets).Observe(seconds);
}

PredictMetrics::PredictMetrics(prometheus::Registry& r)
    : programs(counter(r, "tcld_predict_programs_total", "Programs scored by POST /v1/predict.")),
      batch_size(histogram_family(r, "tcld_predict_batch_size", "Programs per POST /v1/predict request.")
                     .Add({}, prometheus::Histogram::BucketBoundaries{1, 8, 64, 256, 1024, 4096, 16384, 65536})),
      seconds(counter(r, "tcld_predict_model_seconds_total",
                      "Seconds spent parsing, encoding and scoring in POST /v1/predict (throughput = programs / "
                      "seconds).")) {}

InferMetrics::InferMetrics(prometheus::Registry& r)
    : programs(counter(r, "tcld_v2_infer_programs_total",
                       "Programs scored by POST /v2/models/{name}[/versions/{v}]/infer.")),
      seconds(counter(r, "tcld_v2_infer_model_seconds_total",
                      "Seconds spent reading tensors and scoring in v2 infer (throughput = programs / seconds).")) {}

UploadKindMetrics::UploadKindMetrics(prometheus::Registry& r, std::string_view kind) {
  const std::string k(kind);
  auto& uploads = counter_family(r, "tcld_uploads_total",
                                 "Upload requests by kind and outcome (stored, replayed by idempotency, error).");
  stored = &uploads.Add({{"kind", k}, {"outcome", "stored"}});
  replayed = &uploads.Add({{"kind", k}, {"outcome", "replayed"}});
  error = &uploads.Add({{"kind", k}, {"outcome", "error"}});
  auto& lines = counter_family(r, "tcld_upload_lines_total",
                               "Record lines of stored uploads by result (accepted, duplicate, rejected).");
  accepted = &lines.Add({{"kind", k}, {"result", "accepted"}});
  duplicate = &lines.Add({{"kind", k}, {"result", "duplicate"}});
  rejected = &lines.Add({{"kind", k}, {"result", "rejected"}});
  auto& reasons =
      counter_family(r, "tcld_upload_rejected_lines_total", "Rejected record lines of stored uploads by reason class.");
  for (int i = 0; i < core::kRejectReasons; ++i) {
    const std::string reason(core::reject_reason_name(static_cast<core::RejectReason>(i)));
    by_reason[i] = &reasons.Add({{"kind", k}, {"reason", reason}});
  }
  bytes =
      &counter_family(r, "tcld_upload_bytes_total", "Body bytes of stored uploads, as received (compressed when gzip).")
           .Add({{"kind", k}});
}

}  // namespace tcl::api
