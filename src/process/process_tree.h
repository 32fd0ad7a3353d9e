#pragma once
// Descendants of a target's processes (the `children` option).

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "process/process_registry.h"

namespace loadwatch {

/// The last walk of one target, to skip the next one when nothing can have changed.
struct DescendantCache {
  std::vector<pid_t> roots;
  std::vector<pid_t> members;
  std::uint64_t last_pid = 0;
  bool valid = false;
};

/// Adds every descendant of the PIDs in `members` to it; on return `members` is sorted and
/// unique.
///
/// When no PID was allocated since the last walk (the last_pid of /proc/loadavg is
/// unchanged: no fork, no clone anywhere), the roots are the same and none of the last
/// members exited (its children would have been re-parented), the last result is reused
/// without touching /proc. Otherwise: PID/task/TID/children (CONFIG_PROC_CHILDREN) while the
/// processes walked have few threads in total (each thread has its own file), else the
/// parent PIDs of one listing of /proc (0.3 us per process here, plus a stat read only for
/// processes new since the last listing).
void add_descendants(ProcessRegistry& registry, std::vector<pid_t>& members,
                     DescendantCache* cache = nullptr);

/// Threads the children files may be read for in one walk before the listing is cheaper.
inline constexpr long kMaxChildrenFileReads = 64;

}  // namespace loadwatch
