#include "procfs/proc_pid_schedstat.h"

#include <charconv>

namespace loadwatch {

std::optional<PidSchedstat> parse_pid_schedstat(std::string_view text) {
  std::uint64_t v[3] = {0, 0, 0};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (std::uint64_t& field : v) {
    while (p < end && *p == ' ') ++p;
    auto [next, ec] = std::from_chars(p, end, field);
    if (ec != std::errc() || next == p) return std::nullopt;
    p = next;
  }
  while (p < end && (*p == ' ' || *p == '\n')) ++p;
  if (p != end) return std::nullopt;
  if (v[2] == 0) return std::nullopt;  // sched_info off: the figures cannot tell a run
  return PidSchedstat{v[0], v[1], v[2]};
}

}  // namespace loadwatch
