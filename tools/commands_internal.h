// tools/commands_internal.h — helpers shared by tclctl's command files
// (commands.cc, onboard.cc); not part of the tools/ API.
#pragma once

#include <boost/json/value.hpp>

#include <optional>
#include <string>

#include "tools/api_client.h"
#include "tools/commands.h"
#include "tools/local_lab.h"

namespace tcl::tools {

// Prints "tclctl: MESSAGE" on stderr; returns 1 (the failure exit code).
int fail(const std::string& message);
// A JSON value as text for messages: strings bare, null as "-".
std::string text(const boost::json::value& v);
// Polls job ID once a second until it ends, printing its progress on stderr
// and the final job on stdout (as text, or as JSON with `json`); 0 when it
// succeeded.
int wait_job(ApiClient& api, const std::string& id, bool json);
// The answer's body as it came (JSON from tcld), on stdout, one line.
void print_body(const ApiResponse& r);
// POST a sample request with a's --budget/--fraction/--strategy/--seed/--model;
// the parsed answer, or nullopt after printing the failure.
std::optional<boost::json::value> create_sample_request(ApiClient& api, const Args& a, const std::string& platform);

// Registers this machine (`hw`) as `platform` unless it exists; 0, or 1
// after printing why it could not.
int ensure_local_platform(ApiClient& api, const std::string& platform, const LocalHardware& hw);

}  // namespace tcl::tools
