#include "registry/pg_pool_internal.h"

#include <pqxx/except>

#include <exception>
#include <string>

namespace tcl::registry::internal {
namespace {

// pqxx messages carry libpq's multi-line text ("ERROR:  ...\nDETAIL: ...");
// a Status message is one line.
std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

Status with_what(StatusCode code, std::string_view what, std::string_view message) {
  return Status(code, one_line(message)).with_context(what);
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

Status status_from_current_exception(std::string_view what, bool* connection_lost) {
  *connection_lost = false;
  try {
    throw;
  } catch (const pqxx::broken_connection& e) {
    *connection_lost = true;
    return with_what(StatusCode::kUnavailable, what, std::string("database connection lost: ") + e.what());
  } catch (const pqxx::in_doubt_error& e) {
    *connection_lost = true;
    return with_what(StatusCode::kUnavailable, what,
                     std::string("database connection lost during COMMIT; outcome unknown: ") + e.what());
  } catch (const pqxx::sql_error& e) {
    const std::string& state = e.sqlstate();
    if (starts_with(state, "08") || starts_with(state, "57P0")) {  // connection exception, shutdown
      *connection_lost = true;
      return with_what(StatusCode::kUnavailable, what, e.what());
    }
    if (state == "23505") return with_what(StatusCode::kAlreadyExists, what, e.what());
    if (starts_with(state, "23") || starts_with(state, "22")) {
      return with_what(StatusCode::kInvalidArgument, what, e.what());
    }
    if (starts_with(state, "40") || state == "57014" || state == "55P03") {  // retryable, timeouts
      return with_what(StatusCode::kUnavailable, what, e.what());
    }
    if (starts_with(state, "53")) return with_what(StatusCode::kResourceExhausted, what, e.what());
    return with_what(StatusCode::kInternal, what, "SQLSTATE " + state + ": " + e.what());
  } catch (const pqxx::transaction_rollback& e) {
    return with_what(StatusCode::kUnavailable, what, e.what());
  } catch (const std::exception& e) {
    return with_what(StatusCode::kInternal, what, e.what());
  } catch (...) {
    return with_what(StatusCode::kInternal, what, "unknown exception");
  }
}

std::string with_connect_defaults(const std::string& url) {
  const bool is_uri = starts_with(url, "postgresql://") || starts_with(url, "postgres://");
  std::string out = url;
  auto add = [&](std::string_view key, std::string_view value) {
    if (out.find(std::string(key) + "=") != std::string::npos) return;
    if (is_uri) {
      out += out.find('?') == std::string::npos ? '?' : '&';
    } else if (!out.empty()) {
      out += ' ';
    }
    out += key;
    out += '=';
    out += value;
  };
  add("connect_timeout", "3");
  add("fallback_application_name", "tcld");
  return out;
}

}  // namespace tcl::registry::internal
