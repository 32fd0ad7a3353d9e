#include "procfs/proc_pid_statm.h"

#include "procfs/number_fields.h"

namespace loadwatch {

std::optional<std::uint64_t> parse_pid_statm_resident(std::string_view text) {
  // Seven fields (fs/proc/array.c proc_pid_statm): all are checked so that a truncated or
  // foreign text is not taken for a count.
  std::uint64_t v[7] = {};
  if (!parse_number_fields(text, v, 7)) return std::nullopt;
  return v[1];
}

}  // namespace loadwatch
