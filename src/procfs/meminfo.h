#pragma once
// /proc/meminfo: total, available and swap memory.

#include <cstdint>
#include <optional>
#include <string_view>

namespace loadwatch {

/// The /proc/meminfo fields loadwatch exports, in bytes. A field the kernel does not print
/// is left empty, not zero.
struct MemInfo {
  std::uint64_t total_bytes = 0;                  // MemTotal: usable RAM
  std::optional<std::uint64_t> available_bytes;   // MemAvailable: estimate, Linux >= 3.14
  std::optional<std::uint64_t> swap_total_bytes;  // SwapTotal
  std::optional<std::uint64_t> swap_free_bytes;   // SwapFree
};

/// Parses /proc/meminfo text. Only the fields above are converted; other lines must merely
/// have the "Key:" shape. Throws std::runtime_error on malformed input: a line without ':',
/// a non-numeric or overflowing value or an unknown unit on a field that is read, no MemTotal.
MemInfo parse_meminfo(std::string_view text);

}  // namespace loadwatch
