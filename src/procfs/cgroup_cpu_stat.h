#pragma once
// A cgroup's cpu.stat: how often its CPU quota held it back (CFS bandwidth throttling).

#include <cstdint>
#include <optional>
#include <string_view>

namespace loadwatch {

/// The bandwidth counters of one cgroup since it was made.
struct CgroupThrottling {
  std::uint64_t periods = 0;            // nr_periods: enforcement periods with runnable tasks
  std::uint64_t throttled_periods = 0;  // nr_throttled: periods in which the quota ran out
  double throttled_seconds = 0;         // time its run queues spent throttled, summed over CPUs
};

/// Parses cpu.stat of cgroup v2 (throttled_usec, microseconds) or v1 (throttled_time,
/// nanoseconds). nullopt when the file carries no bandwidth counters (a v2 cgroup without the
/// cpu controller has only usage_usec and friends). Throws std::runtime_error when one of the
/// three counters is present but not an unsigned integer, or some of them are missing.
std::optional<CgroupThrottling> parse_cgroup_cpu_stat(std::string_view text);

}  // namespace loadwatch
