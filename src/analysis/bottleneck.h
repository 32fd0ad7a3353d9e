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
inline constexpr double kMockLatencyGrowth = 1.5;   // mock p95 >= 1.5 x its lowest-load p95 ...
inline constexpr double kMockLatencyShare = 0.25;   // ... and >= 25 % of the generator's p95
inline constexpr double kPortUsageRatio = 0.80;     // ephemeral ports or TIME_WAIT buckets
inline constexpr double kFdUsageRatio = 0.80;       // open fds against the soft limit
inline constexpr double kSoftirqShare = 0.20;       // softirq >= 20 % of all the host's CPU

/// The checks, in the order they are made.
enum class Check {
  target_cpu,
  generator_cpu,
  mock,
  listen_overflows,
  ports,
  fds,
  softirq,
};
const char* check_name(Check c);
std::optional<Check> check_from_name(const std::string& name);

struct Finding {
  Check check = Check::target_cpu;
  std::string subject;   // the target, "host", "mock", ...
  std::string evidence;  // the figures, in words
  double value = 0;      // the figure compared ...
  double threshold = 0;  // ... with this

  bool operator==(const Finding&) const = default;
};

struct Bottleneck {
  bool assessed = false;  // false: the phase carries no process, host or mock figures
  std::string summary;    // one sentence: the verdict, or why there is none
  std::vector<Finding> findings;  // in check order; findings[0] saturated first

  bool operator==(const Bottleneck&) const = default;
};

/// `at` is the knee phase; `previous` the phase one step below it and `lowest` the lowest-load
/// phase (both may be null), for the checks that look at a rise.
Bottleneck find_bottleneck(const PhaseStats& at, const PhaseStats* previous,
                           const PhaseStats* lowest);

}  // namespace loadwatch::analysis
