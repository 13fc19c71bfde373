#include "api/http_metrics.h"

namespace tcl::api {

HttpMetrics::HttpMetrics(prometheus::Registry& registry)
    : requests_(prometheus::BuildCounter()
                    .Name("tcld_http_requests_total")
                    .Help("HTTP requests answered, by route template, method and status code.")
                    .Register(registry)),
      duration_(prometheus::BuildHistogram()
                    .Name("tcld_http_request_duration_seconds")
                    .Help("Time from a request's full read to its answer being handed to the socket.")
                    .Register(registry)),
      in_flight_(prometheus::BuildGauge()
                     .Name("tcld_http_requests_in_flight")
                     .Help("Requests read and not yet answered.")
                     .Register(registry)
                     .Add({})) {}

void HttpMetrics::observe(const std::string& route, const std::string& method, int code, double seconds) {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  requests_.Add({{"route", route}, {"method", method}, {"code", std::to_string(code)}}).Increment();
  duration_.Add({{"route", route}, {"method", method}}, kBuckets).Observe(seconds);
}

}  // namespace tcl::api
