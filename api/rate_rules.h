// api/rate_rules.h — the slow-client rules of api/server.h as arithmetic:
// by when a read of request body bytes, or a write of answer bytes, must
// have finished. Pure functions, so the rules are checked without a socket
// (tests/api/rate_rules_test.cc); the server arms its timers with them.
//
// Reads: the body must average `min_rate` bytes/s since it began (pauses the
// handler caused excluded) once `grace` has passed, and no single wait may
// exceed `timeout`. Writes: the answer must average `min_rate` over the time
// spent writing it; one write may take `timeout`, or as long as `min_rate`
// needs for its bytes when that is longer, so a steady reader above the
// floor is never cut however large the answer (answers go out in pieces).
// min_rate 0 = no rate rule, only the timeout.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace tcl::api {

struct RateDeadline {
  std::chrono::steady_clock::time_point at;
  const char* reason;  // the rule that set it: read_timeout, min_request_body_rate, write_timeout, min_response_rate
};

struct RateRule {
  std::size_t min_rate = 240;  // bytes/s; 0 = none
  std::chrono::steady_clock::duration grace = std::chrono::seconds(5);
  std::chrono::steady_clock::duration timeout = std::chrono::seconds(30);
};

// The next read of a body that began at `active_since` (its start moved by the
// handler's pauses) and has brought `received` bytes so far.
RateDeadline read_deadline(const RateRule& rule, std::chrono::steady_clock::time_point now,
                           std::chrono::steady_clock::time_point active_since, std::uint64_t received);

// A write of `bytes` starting `now`, after `sent` bytes written in `active`
// time (waits for the handler's next chunk excluded).
RateDeadline write_deadline(const RateRule& rule, std::chrono::steady_clock::time_point now, std::uint64_t sent,
                            std::chrono::steady_clock::duration active, std::size_t bytes);

}  // namespace tcl::api
