// api/http_error.h — the one place where a Status becomes an HTTP answer.
//
// Every failure leaves the daemon as
//   {"error": {"code": "NOT_FOUND", "message": "...", "details": {...}}}
// with the status from http_status_for(). Handlers return error_response()
// instead of building error bodies by hand.
#pragma once

#include <boost/json/value.hpp>

#include "api/http_types.h"
#include "core/status.h"

namespace tcl::api {

http::status http_status_for(StatusCode code);

Response error_response(const Status& status, boost::json::value details = nullptr);
// For failures that have no Status code of their own (405, 413, 404 route).
Response error_response(http::status http_status, std::string_view code, std::string_view message,
                        boost::json::value details = nullptr);

Response json_response(http::status status, const boost::json::value& body);

}  // namespace tcl::api
