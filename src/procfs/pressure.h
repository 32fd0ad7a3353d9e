#pragma once
// /proc/pressure/{cpu,memory,io}: pressure stall information (PSI, Linux >= 4.20).

#include <cstdint>
#include <optional>
#include <string_view>

namespace loadwatch {

/// The cumulative stall times of one PSI file, in microseconds. "some": time at least one
/// task was waiting for the resource; "full": time every non-idle task was (the kernel prints
/// no "full" line for cpu before Linux 5.13, and the host-wide cpu "full" stays 0 after).
struct Pressure {
  std::optional<std::uint64_t> some_total_us;
  std::optional<std::uint64_t> full_total_us;
};

/// Parses a PSI file ("some avg10=0.00 avg60=0.00 avg300=0.00 total=123\nfull ...").
/// The avg fields are ignored (they are the kernel's own moving averages; rates come from the
/// totals). Throws std::runtime_error on a line that is neither "some" nor "full", a missing
/// or malformed total=, or a file with no line.
Pressure parse_pressure(std::string_view text);

}  // namespace loadwatch
