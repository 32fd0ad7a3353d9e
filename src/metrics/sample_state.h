#pragma once
// What one sample found of the targets and sources: written by their collectors, read by the
// collectors after them and, through the published snapshot, by the pages and APIs.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace loadwatch {

/// What the targets collector found this sample; later collectors (network) read it.
struct TargetState {
  std::string name;
  std::string selector;  // "port:2525"
  bool up = false;
  std::vector<pid_t> pids;                  // sorted
  std::vector<std::uint16_t> listen_ports;  // TCP ports the group listens on (network fills)
  // Open fds of each of `pids` as the targets collector counted them this sample, -1 where
  // unknown; the tcp collector's socket owners use them where the kernel gives no count.
  std::vector<long long> fd_counts;
  // PIDs of `pids` that did not run since the targets collector last read them (schedstat
  // unchanged), sorted: their fd tables did not change by themselves.
  std::vector<pid_t> quiet;
  // The /proc/PID/cgroup texts the CPU limit re-read or confirmed this sample (each member's
  // every 15 samples), by PID in the order of `pids`, for the throttling collector; "" when
  // unreadable.
  std::vector<std::pair<pid_t, std::string>> cgroups;
};

/// A pull source's state as the sources collector read it this sample (landing page, API).
struct SourceState {
  std::string name;
  std::string kind;
  bool up = false;
  std::uint64_t scrapes = 0;      // finished so far; 0: the first is still running
  std::string last_error_reason;  // of the last failed scrape ("timeout"...), "" if none yet
  std::string last_error;         // its message
  double last_success = 0;        // unix time of the last successful scrape, 0 = never
};

}  // namespace loadwatch
