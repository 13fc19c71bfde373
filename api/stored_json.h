// api/stored_json.h — JSON texts the registry stores (a version's metrics
// and config, a job's options and progress) embedded in an answer as JSON,
// not as strings.
//
// Thread-safety: pure function.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <string>
#include <string_view>

namespace tcl::api {

// `text` parsed; an empty object for an empty text or one that does not
// parse (an answer never fails on a stored text).
inline boost::json::value embedded_json(const std::string& text) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text.empty() ? std::string_view("{}") : std::string_view(text), ec);
  return ec ? boost::json::value(boost::json::object{}) : v;
}

}  // namespace tcl::api
