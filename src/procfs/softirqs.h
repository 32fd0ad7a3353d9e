#pragma once
// /proc/softirqs: each softirq type summed over CPUs.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loadwatch {

/// One row of /proc/softirqs: the type as the kernel prints it (NET_RX, TIMER, ...) and its
/// count summed over every CPU column.
struct SoftirqCount {
  std::string type;
  std::uint64_t total = 0;
};

/// Parses /proc/softirqs text; rows in file order. Throws std::runtime_error on malformed
/// input: no "CPU0 ..." header, a row whose number of counts differs from the header's, a
/// non-numeric count, an empty or duplicate type, no rows at all.
std::vector<SoftirqCount> parse_softirqs(std::string_view text);

}  // namespace loadwatch
