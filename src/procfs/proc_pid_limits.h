#pragma once
// /proc/PID/limits: the resource limits of a process as a fixed-width table (proc(5)).

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace loadwatch {

/// RLIMIT_NOFILE of a process. kUnlimited stands for "unlimited" (RLIM_INFINITY; the
/// kernel refuses it for NOFILE, but the table can still say so).
struct OpenFilesLimit {
  static constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t soft = kUnlimited;
  std::uint64_t hard = kUnlimited;
};

/// Finds the "Max open files" row of /proc/PID/limits text. Returns nullopt when the row is
/// missing or malformed; never throws.
std::optional<OpenFilesLimit> parse_max_open_files(std::string_view text);

}  // namespace loadwatch
