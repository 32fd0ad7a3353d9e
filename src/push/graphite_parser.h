#pragma once
// Graphite plaintext protocol ("carbon" line receiver): `<path> <value> <timestamp>`.

#include <string_view>

namespace loadwatch {

/// One parsed plaintext line. `path` points into the caller's buffer.
struct GraphiteLine {
  std::string_view path;
  double value = 0;
  /// Unix seconds as sent; negative when the sender asked for "now" (-1) or sent none.
  double timestamp = -1;
};

/// Parses one line (without its '\n'; a trailing '\r' and surrounding blanks are tolerated).
/// Returns nullptr on success, else a static message saying what is wrong. Pure; never throws.
const char* parse_graphite_line(std::string_view line, GraphiteLine& out);

/// True for a line that carries nothing (empty, blanks only): skipped, not an error.
bool graphite_line_blank(std::string_view line);

}  // namespace loadwatch
