#include "procfs/cgroup_cpu_stat.h"

#include <stdexcept>

#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

std::optional<CgroupThrottling> parse_cgroup_cpu_stat(std::string_view text) {
  std::optional<std::uint64_t> periods, throttled, usec, nsec;
  while (!text.empty()) {
    std::string_view line = next_line(text);
    std::string_view name = next_field(line);
    if (name == "nr_periods")
      periods = to_u64(next_field(line), name);
    else if (name == "nr_throttled")
      throttled = to_u64(next_field(line), name);
    else if (name == "throttled_usec")
      usec = to_u64(next_field(line), name);
    else if (name == "throttled_time")
      nsec = to_u64(next_field(line), name);
  }
  if (!periods && !throttled && !usec && !nsec) return std::nullopt;
  if (!periods || !throttled || (!usec && !nsec)) {
    throw std::runtime_error("cpu.stat: bandwidth counters incomplete");
  }
  CgroupThrottling t;
  t.periods = *periods;
  t.throttled_periods = *throttled;
  t.throttled_seconds = usec ? static_cast<double>(*usec) / 1e6 : static_cast<double>(*nsec) / 1e9;
  return t;
}

}  // namespace loadwatch
