#pragma once
// Files embedded in the binary at build time (the live page's script, styles and uPlot), so
// the daemon never reads them from disk and works from the one binary.

#include <optional>
#include <string_view>

namespace loadwatch {

/// The bytes of an embedded file by its name under /static/ (e.g. "uPlot.iife.min.js").
std::optional<std::string_view> find_static_file(std::string_view name);

}  // namespace loadwatch
