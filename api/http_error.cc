#include "api/http_error.h"

#include "core/json_write.h"

namespace tcl::api {

http::status http_status_for(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return http::status::ok;
    case StatusCode::kInvalidArgument: return http::status::bad_request;
    case StatusCode::kNotFound: return http::status::not_found;
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition: return http::status::conflict;
    case StatusCode::kPermissionDenied: return http::status::forbidden;
    case StatusCode::kUnauthenticated: return http::status::unauthorized;
    case StatusCode::kResourceExhausted: return http::status::payload_too_large;
    case StatusCode::kUnavailable: return http::status::service_unavailable;
    case StatusCode::kCancelled: return http::status::conflict;
    case StatusCode::kDataLoss:
    case StatusCode::kInternal: return http::status::internal_server_error;
  }
  return http::status::internal_server_error;
}

std::string public_message(const Status& status) {
  switch (status.code()) {
    case StatusCode::kUnavailable: return "tcld cannot reach a service it depends on (its database); retry later";
    case StatusCode::kDataLoss:
      return "stored data failed its integrity check; see the daemon log under this request's X-Request-Id";
    case StatusCode::kInternal: return "internal error; see the daemon log under this request's X-Request-Id";
    default: return status.message();
  }
}

Response json_response(http::status status, const boost::json::value& body) {
  Response r;
  r.status = status;
  r.body = core::write_json(body);
  r.body.push_back('\n');
  return r;
}

Response error_response(http::status http_status, std::string_view code, std::string_view message,
                        boost::json::value details) {
  boost::json::object err;
  err["code"] = code;
  err["message"] = message;
  err["details"] = details.is_null() ? boost::json::value(boost::json::object{}) : std::move(details);
  Response r = json_response(http_status, boost::json::object{{"error", std::move(err)}});
  if (http_status == http::status::unauthorized) r.headers["WWW-Authenticate"] = "Bearer";
  return r;
}

Response error_response(const Status& status, boost::json::value details) {
  const http::status code = http_status_for(status.code());
  // A Status about one input field names it in details, unless the caller did.
  if (!status.field().empty() && (details.is_null() || details.is_object())) {
    if (details.is_null()) details = boost::json::object{};
    if (!details.as_object().contains("field")) details.as_object()["field"] = status.field();
  }
  Response r = error_response(code, status_code_name(status.code()), public_message(status), std::move(details));
  if (static_cast<int>(code) >= 500) r.log_cause = status.to_string();
  if (code == http::status::service_unavailable) r.headers["Retry-After"] = "1";
  return r;
}

}  // namespace tcl::api
