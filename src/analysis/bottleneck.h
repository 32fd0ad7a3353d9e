#pragma once
// What saturated first at the knee. The checks run in a fixed order, from the most direct cause
// of a throughput plateau to the least; every check that fires is kept as a finding with its
// figures, and the first one is the verdict. docs/capacity.md explains the order.

#include <optional>
#include <string>
#include <vector>

#include "analysis/phase_stats.h"

namespace loadwatch::analysis {

inline constexpr double kProcessCoreSaturation = 0.95;  // one process at >= 95 % of one core
inline constexpr double kTargetCoresSaturation = 0.90;  // a group at >= 90 % of its cores
inline constexpr double kMockErrorRatio = 0.01;         // the mock fails >= 1 % of requests
inline constexpr double kMockLatencyGrowth = 1.5;       // mock p95 >= 1.5 x its lowest-load p95 ...
inline constexpr double kMockLatencyShare = 0.25;       // ... and >= 25 % of the generator's p95
inline constexpr double kPortUsageRatio = 0.80;         // ephemeral ports or TIME_WAIT buckets
inline constexpr double kFdUsageRatio = 0.80;           // open fds against the soft limit
inline constexpr double kSoftirqShare = 0.20;           // softirq >= 20 % of all the host's CPU
// The host's CPU: busy + steal >= 90 % of its cores, or a task waiting for a CPU >= 50 % of
// the time, or more runnable threads than cores (mean over the window).
inline constexpr double kHostCpuSaturation = 0.90;
inline constexpr double kCpuPressureRatio = 0.50;
inline constexpr double kRunQueuePerCore = 1.0;
/// CPU pressure and the run queue judge the host only when this share of its cores is busy.
inline constexpr double kHostBusyForPressure = 0.50;
inline constexpr double kThrottledPeriodRatio = 0.25;  // the quota ran out in >= 25 % of periods
// Memory: a task stalled on memory >= 10 % of the time, or swap traffic >= 1 MiB/s (4 KiB pages).
inline constexpr double kMemoryPressureRatio = 0.10;
inline constexpr double kSwapPagesPerSecond = 256;
// I/O: a task stalled on I/O >= 20 % of the time, or iowait >= 20 % of the host's cores.
inline constexpr double kIoPressureRatio = 0.20;
inline constexpr double kIowaitShare = 0.20;
// A queue: latency at the highest load >= 1.5 x its lowest-load value.
inline constexpr double kQueueLatencyGrowth = 1.5;

/// The checks, in the order they are made. `queueing` is made only when no other check fired.
enum class Check {
  target_cpu,
  generator_cpu,
  host_cpu,
  throttling,
  memory,
  iowait,
  mock,
  listen_overflows,
  ports,
  fds,
  softirq,
  queueing,
};
const char* check_name(Check c);
/// What a check names as saturated, for the verdict's sentence ("the host's CPU").
const char* what_saturated(Check c);
std::optional<Check> check_from_name(const std::string& name);

struct Finding {
  Check check = Check::target_cpu;
  std::string subject;   // the target, "host", "mock", ...
  std::string evidence;  // the figures, in words
  double value = 0;      // the figure compared (queueing: the requests in service at once) ...
  double threshold = 0;  // ... with this (queueing: the latency growth needed)
  /// The bound of `value`, when its inputs carry one (queueing: K from the bounds of the
  /// req/s and of the latency).
  std::optional<double> value_low = {}, value_high = {};

  bool operator==(const Finding&) const = default;
};

struct Bottleneck {
  bool assessed = false;          // false: the phase carries no process, host or mock figures
  std::string summary;            // one sentence: the verdict, or why there is none
  std::vector<Finding> findings;  // in check order; findings[0] saturated first

  bool operator==(const Bottleneck&) const = default;
};

/// `at` is the knee phase; `previous` the phase one step below it and `lowest` the lowest-load
/// phase (both may be null), for the checks that look at a rise; `highest` the highest-load
/// phase (null: `at`), where the queueing check looks for a queue.
Bottleneck find_bottleneck(const PhaseStats& at, const PhaseStats* previous,
                           const PhaseStats* lowest, const PhaseStats* highest = nullptr);

}  // namespace loadwatch::analysis
