// api/ui_assets.h — the web console's files (ui/), compiled into tcld by
// cmake/embed_ui.cmake, so the binary serves them with nothing installed beside it.
// Constant after start-up; safe to read from any thread.
#pragma once

#include <span>
#include <string_view>

namespace tcl::api {

struct UiAsset {
  std::string_view name;          // "index.html": the file's name in ui/
  std::string_view content_type;  // from its extension
  std::string_view bytes;         // the file's exact bytes
  std::string_view etag;          // quoted, from the bytes' SHA-256
};

// Every file of ui/ but its README, by name; static storage.
std::span<const UiAsset> ui_assets();

}  // namespace tcl::api
