#pragma once
// /proc/PID/status: "Key:\tvalue" lines (proc(5)); loadwatch reads memory and context
// switch counts from it.

#include <cstdint>
#include <optional>
#include <string_view>

namespace loadwatch {

/// Fields of /proc/PID/status used by loadwatch. The Vm* lines are absent for kernel
/// threads and zombies (no mm), hence optional.
struct PidStatus {
  std::optional<std::uint64_t> vm_rss_bytes;   // VmRSS
  std::optional<std::uint64_t> vm_hwm_bytes;   // VmHWM: the kernel's own RSS peak
  std::optional<std::uint64_t> vm_swap_bytes;  // VmSwap
  std::uint64_t voluntary_ctxt_switches = 0;
  std::uint64_t nonvoluntary_ctxt_switches = 0;
};

/// Parses the text of /proc/PID/status. Unknown, malformed or missing lines are skipped
/// (the file grows with every kernel); never throws.
PidStatus parse_pid_status(std::string_view text);

}  // namespace loadwatch
