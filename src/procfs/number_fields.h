#pragma once
// A line of space-separated unsigned decimals, all of them (/proc/PID/schedstat, statm).

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace loadwatch {

/// Parses exactly `n` numbers into `out` (then blanks and line ends only); false on anything
/// else, leaving `out` partly written. Never throws.
inline bool parse_number_fields(std::string_view text, std::uint64_t* out, std::size_t n) {
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (std::size_t i = 0; i < n; ++i) {
    while (p < end && *p == ' ') ++p;
    auto [next, ec] = std::from_chars(p, end, out[i]);
    if (ec != std::errc() || next == p) return false;
    p = next;
  }
  while (p < end && (*p == ' ' || *p == '\n')) ++p;
  return p == end;
}

}  // namespace loadwatch
