// core/status.h — the one error value of TCL: a closed code plus a message
// with context, and Result<T> = a T or a non-OK Status (C++20 has no
// std::expected). Exceptions from pqxx, Beast and torch are turned into a
// Status at the edge of the folder that owns that library; api/ maps a Status
// to an HTTP response in one place (api/http_error.h).
//
// Both are [[nodiscard]]: a call whose Status or Result is dropped does not
// compile (-Werror). Where ignoring is right, say so: `(void)f();  // why`.
//
// Thread-safety: values; safe to copy between threads.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tcl {

// Stored nowhere on disk; order is free to change.
enum class StatusCode {
  kOk,
  kInvalidArgument,     // the caller's input is wrong (HTTP 400)
  kNotFound,            // a named thing does not exist (404)
  kAlreadyExists,       // a unique name is taken (409)
  kFailedPrecondition,  // the state does not allow it now (409)
  kPermissionDenied,    // authenticated but not allowed (403)
  kUnauthenticated,     // no or bad credentials (401)
  kResourceExhausted,   // a size or rate limit was hit (413/429)
  kUnavailable,         // a dependency (the database) is down (503)
  kCancelled,           // the work was cancelled on request
  kDataLoss,            // stored data failed a checksum
  kInternal,            // a bug or an unexpected failure (500)
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  static Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status already_exists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status failed_precondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
  static Status permission_denied(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
  static Status unauthenticated(std::string m) { return {StatusCode::kUnauthenticated, std::move(m)}; }
  static Status resource_exhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status data_loss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
  static Status internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  // kInvalidArgument about one field of the caller's input: the message is
  // "field '<field>' <what>" and field() names it.
  static Status invalid_field(std::string_view field, std::string_view what);

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NOT_FOUND: platform 'x' does not exist"
  std::string to_string() const;

  // Returns a copy whose message is prefixed with `context` ("loading v3: ...");
  // field() is kept.
  Status with_context(std::string_view context) const;

  // The input field the error is about (api/ answers it as {"field": ...});
  // empty when none. Structured, so nobody parses it out of the message.
  const std::string& field() const { return field_; }
  // A copy with field() set (the message is unchanged).
  Status with_field(std::string field) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string field_;
};

// A T or a non-OK Status. Accessing the value of an error is a bug (asserted).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).is_ok()); }  // NOLINT

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }

  const Status& status() const {
    static const Status kOkStatus;
    return is_ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & {
    assert(is_ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(is_ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(is_ok());
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tcl
