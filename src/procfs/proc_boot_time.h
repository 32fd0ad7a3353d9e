#pragma once
// The "btime" line of /proc/stat: boot time, seconds since the epoch (proc(5)).

#include <cstdint>
#include <optional>
#include <string_view>

namespace loadwatch {

/// Parses "btime N" out of /proc/stat text; nullopt when absent or malformed. Process start
/// times are btime + starttime / CLK_TCK. Never throws.
std::optional<std::uint64_t> parse_boot_time(std::string_view proc_stat_text);

}  // namespace loadwatch
