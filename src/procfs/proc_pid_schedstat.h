#pragma once
// /proc/PID/schedstat: the scheduler's accounting of one task (Documentation/scheduler/
// sched-stats.rst): time on a CPU (ns), time waiting on a run queue (ns), times run.

#include <cstdint>
#include <optional>
#include <string_view>

namespace loadwatch {

/// The thread group leader's figures only: other threads have their own
/// (PID/task/TID/schedstat). So it tells whether a process ran only while it has one thread.
struct PidSchedstat {
  std::uint64_t run_ns = 0;      // time spent on a CPU
  std::uint64_t wait_ns = 0;     // time spent runnable, waiting for a CPU
  std::uint64_t timeslices = 0;  // times it was put on a CPU

  bool operator==(const PidSchedstat&) const = default;
};

/// Parses the text of /proc/PID/schedstat ("216304815 33615924 621\n"). Returns nullopt on
/// malformed text, and when the kernel keeps no figures (it then prints "0 0 0": a task that
/// exists has run at least once); never throws.
std::optional<PidSchedstat> parse_pid_schedstat(std::string_view text);

}  // namespace loadwatch
