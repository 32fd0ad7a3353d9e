#pragma once
// The processes of a systemd unit, read from the unit's cgroup (unit: selector).

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "procfs/fs_root.h"

namespace loadwatch {

/// Parses cgroup.procs text (one PID a line) and appends the PIDs to `out`. Never throws.
void parse_cgroup_procs(std::string_view text, std::vector<pid_t>& out);

/// "mountebank" -> "mountebank.service"; names with a unit suffix are kept as they are.
std::string unit_name(std::string_view value);

/// Searches the cgroup hierarchies below `sys` (a sysfs root) for the directory of `unit`:
/// fs/cgroup (cgroup v2), fs/cgroup/unified (hybrid v2), fs/cgroup/systemd (v1 name=systemd),
/// fs/cgroup/pids (v1). systemd names a unit's cgroup after the unit, below its slice
/// (system.slice/NAME, or nested slices, or user@UID.service/... for user units), so the
/// search is a bounded breadth-first walk. Returns the path relative to `sys`.
std::optional<std::string> find_unit_cgroup(const FsRoot& sys, std::string_view unit);

/// One unit's cgroup, located once and cached. Not thread-safe (sampler thread).
class UnitCgroup {
 public:
  explicit UnitCgroup(std::string_view unit) : unit_(unit_name(unit)) {}

  /// Appends the PIDs of the unit's cgroup and its sub-cgroups (Delegate=yes units have
  /// some) to `out`. Returns false when the unit's cgroup does not exist (unit not
  /// running, or no systemd): a quiet "down". The cached directory is re-read every call;
  /// the tree is searched again only every kResearchCalls calls while it is missing.
  bool pids(const FsRoot& sys, std::vector<pid_t>& out);

  const std::string& unit() const { return unit_; }
  const std::string& directory() const { return dir_; }

  static constexpr std::uint32_t kResearchCalls = 10;

 private:
  bool read_tree(const FsRoot& sys, std::vector<pid_t>& out);

  std::string unit_;
  std::string dir_;  // relative to the sysfs root; empty until found
  std::uint32_t calls_since_search_ = 0;
  bool searched_ = false;
  std::string buf_;
};

}  // namespace loadwatch
