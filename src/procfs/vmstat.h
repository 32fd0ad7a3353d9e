#pragma once
// /proc/vmstat: the swap traffic counters.

#include <cstdint>
#include <optional>
#include <string_view>

namespace loadwatch {

/// Pages swapped in from and out to swap space since boot. Empty when the kernel prints no
/// such line (built without swap support).
struct VmSwapCounters {
  std::optional<std::uint64_t> pswpin;
  std::optional<std::uint64_t> pswpout;
};

/// Parses /proc/vmstat text ("name value" lines). Only pswpin and pswpout are converted;
/// every other line must merely have a name. Throws std::runtime_error when a converted value
/// is not an unsigned integer.
VmSwapCounters parse_vmstat_swap(std::string_view text);

}  // namespace loadwatch
