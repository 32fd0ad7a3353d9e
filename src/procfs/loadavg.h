#pragma once
// /proc/loadavg: the 1, 5 and 15 minute load averages.

#include <string_view>

namespace loadwatch {

/// The three load averages of /proc/loadavg: runnable plus uninterruptible (D state) threads,
/// exponentially averaged over 1, 5 and 15 minutes (proc(5)).
struct LoadAvg {
  double load1 = 0;
  double load5 = 0;
  double load15 = 0;
};

/// Parses /proc/loadavg text ("0.20 0.18 0.12 1/80 11206"); the fields after the third are
/// ignored. Throws std::runtime_error when one of the three is missing, negative, not finite
/// or not a plain decimal.
LoadAvg parse_loadavg(std::string_view text);

}  // namespace loadwatch
