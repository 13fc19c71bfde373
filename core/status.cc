#include "core/status.h"

namespace tcl {

std::string_view status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kUnauthenticated: return "UNAUTHENTICATED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

std::string Status::to_string() const {
  if (is_ok()) return "OK";
  std::string s(status_code_name(code_));
  s += ": ";
  s += message_;
  return s;
}

Status Status::with_context(std::string_view context) const {
  if (is_ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  Status s(code_, std::move(m));
  s.field_ = field_;
  return s;
}

Status Status::invalid_field(std::string_view field, std::string_view what) {
  std::string m = "field '";
  m += field;
  m += "' ";
  m += what;
  return Status(StatusCode::kInvalidArgument, std::move(m)).with_field(std::string(field));
}

Status Status::with_field(std::string field) const {
  Status s = *this;
  s.field_ = std::move(field);
  return s;
}

}  // namespace tcl
