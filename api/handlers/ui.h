// api/handlers/ui.h — the web console (ui/), served by tcld itself:
//   GET /ui, /ui/           ui/index.html
//   GET /ui/{file}          that file of ui/ (api/ui_assets.h); 404 for any other name
//
// The files are static and public (no token: they hold no data); every page's data comes from the
// API with the bearer token the user typed (kept in the browser's sessionStorage), so the API's auth
// and limits are the console's. Each answer carries the console's Content-Security-Policy (only this
// origin's scripts, styles and connections, no inline script, no framing), nosniff, and an ETag from
// the file's bytes; `If-None-Match` with it is 304, and Cache-Control makes the browser ask each time
// (an upgraded tcld is seen at once).
// Runs inline on the I/O thread (never blocks: bytes in memory).
#pragma once

#include <span>
#include <string_view>

#include "api/router.h"
#include "api/ui_assets.h"

namespace tcl::api {

// The Content-Security-Policy of every /ui answer.
inline constexpr std::string_view kUiContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

// The file named by the route's {file} parameter (index.html when there is none), from `assets`.
Response handle_ui_file(const Request& req, std::span<const UiAsset> assets);

void add_ui_routes(Router& router, std::span<const UiAsset> assets = ui_assets());

}  // namespace tcl::api
