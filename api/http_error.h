// api/http_error.h — the one place where a Status becomes an HTTP answer.
//
// Every failure leaves the daemon as
//   {"error": {"code": "NOT_FOUND", "message": "...", "details": {...}}}
// with the status from http_status_for(). Handlers return error_response()
// instead of building error bodies by hand.
//
// A 5xx answer carries our own words, never the cause's text (a database
// host, port or PostgreSQL's message is not for clients): the cause goes to
// Response::log_cause, which the server writes into the request's log line
// beside its X-Request-Id.
#pragma once

#include <boost/json/value.hpp>

#include "api/http_types.h"
#include "core/status.h"

namespace tcl::api {

http::status http_status_for(StatusCode code);

// What a client is told of `status`: its message for a 4xx, our own fixed
// words for a 5xx (kUnavailable, kInternal, kDataLoss).
std::string public_message(const Status& status);

// details.field is status.field() when that is set and `details` (null or an
// object) names no field of its own.
Response error_response(const Status& status, boost::json::value details = nullptr);
// For failures that have no Status code of their own (405, 413, 404 route).
Response error_response(http::status http_status, std::string_view code, std::string_view message,
                        boost::json::value details = nullptr);

Response json_response(http::status status, const boost::json::value& body);

}  // namespace tcl::api
