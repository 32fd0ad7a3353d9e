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
/// Every process is read at most this often: a scan costs about 70 us a process on a busy
/// 2-core host (45 ms for 660 processes), 1 % of a core at this period. Between scans the
/// last scan's figures are exported again.
inline constexpr double kTopCpuScanSeconds = 5;

/// Builds the "topcpu" collector: reads /proc/PID/stat of every process each sample.
std::unique_ptr<Collector> make_topcpu_collector(const CollectorEnv& env);

}  // namespace loadwatch
