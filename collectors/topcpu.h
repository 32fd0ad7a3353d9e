#pragma once
// Collector "topcpu": the busiest process names on the host by CPU, whoever runs them. The
// run report names them when the host's CPU saturates (busy loops, a neighbour, a backup).

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// At most this many names are exported per sample (docs/limits.md).
inline constexpr std::size_t kTopCpuNames = 5;
/// Names below this many cores over the interval are left out.
inline constexpr double kTopCpuMinCores = 0.01;
/// Every process is read at most this often. A process with one thread whose schedstat did not
/// move since its last stat did not run: the scan reads that (~2 us) instead of the stat
/// (~6 us and its parse). Between scans the last scan's figures are exported again.
inline constexpr double kTopCpuScanSeconds = 5;
/// Processes are read only while the host's CPU was at least this busy (of all its cores,
/// steal included) over the last period, by /proc/stat: an idle host, the usual case outside
/// a run, pays one small read per period instead of one per process. The report needs these
/// names only when the host's CPU saturates. After the host turns busy, the first figures
/// come two periods later (the first scan only sets the base).
inline constexpr double kTopCpuHostBusy = 0.5;
/// Idle periods in a row through which the kept fds and the last figures read stay: a host
/// hovering at kTopCpuHostBusy does not reopen one or two fds per process at each busy
/// period, and its first scan reads only the schedstat of a process that did not run. No fd
/// is opened while idle; a process that exits meanwhile holds its fds until the next scan or
/// the last of these periods (docs/limits.md).
inline constexpr int kTopCpuIdlePeriodsKept = 12;

/// Builds the "topcpu" collector: reads /proc/PID/stat of every process every
/// kTopCpuScanSeconds while the host is busy.
std::unique_ptr<Collector> make_topcpu_collector(const CollectorEnv& env);

}  // namespace loadwatch
