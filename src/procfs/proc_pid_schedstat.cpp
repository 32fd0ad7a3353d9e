#include "procfs/proc_pid_schedstat.h"

#include "procfs/number_fields.h"

namespace loadwatch {

std::optional<PidSchedstat> parse_pid_schedstat(std::string_view text) {
  std::uint64_t v[3] = {0, 0, 0};
  if (!parse_number_fields(text, v, 3)) return std::nullopt;
  if (v[2] == 0) return std::nullopt;  // sched_info off: the figures cannot tell a run
  return PidSchedstat{v[0], v[1], v[2]};
}

}  // namespace loadwatch
