#pragma once
// Descendants of a target's processes (the `children` option).

#include <sys/types.h>

#include <vector>

#include "collectors/process_registry.h"

namespace loadwatch {

/// Adds every descendant of the PIDs in `members` to it; on return `members` is sorted and
/// unique. Uses PID/task/TID/children (CONFIG_PROC_CHILDREN) while the processes walked
/// have few threads in total (each thread has its own file), else the parent PIDs of one
/// listing of /proc (0.3 us per process here, and a stat read only for processes new since
/// the last sample).
void add_descendants(ProcessRegistry& registry, std::vector<pid_t>& members);

/// Threads the children files may be read for in one walk before the listing is cheaper.
inline constexpr long kMaxChildrenFileReads = 64;

}  // namespace loadwatch
