#pragma once
// The CPUs a process may use: its CPU affinity (Cpus_allowed_list of /proc/PID/status) and
// the CPU quota of its cgroups (cgroup v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us,
// on its own cgroup and every ancestor). A process under a quota of half a core is saturated
// at 0.5 cores, however idle the host.

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "procfs/fs_root.h"

namespace loadwatch {

/// CPUs in a cpu list such as "0-3,8,10-11"; nullopt when malformed or empty.
std::optional<int> count_cpu_list(std::string_view list);

/// The Cpus_allowed_list of /proc/PID/status text, counted; nullopt when absent or malformed.
std::optional<int> status_cpus_allowed(std::string_view status_text);

/// Cores of a cgroup v2 cpu.max ("QUOTA PERIOD", "max PERIOD" = no quota).
std::optional<double> parse_cpu_max(std::string_view text);

/// Cores of a v1 quota (cpu.cfs_quota_us, -1 = none) over its period (cpu.cfs_period_us).
std::optional<double> parse_cfs_quota(std::string_view quota_text, std::string_view period_text);

/// Where the hierarchies the CPU quota reads are mounted, below a sysfs root: v2 (a v2-only
/// host, or hybrid's unified) and v1's cpu hierarchy.
inline constexpr const char* kCgroupV2Roots[] = {"fs/cgroup", "fs/cgroup/unified"};
inline constexpr const char* kCgroupV1CpuRoots[] = {"fs/cgroup/cpu", "fs/cgroup/cpu,cpuacct",
                                                    "fs/cgroup/cpuacct,cpu"};

/// A line of a /proc/PID/cgroup text that the CPU quota reads: cgroup v2's ("0::PATH") or
/// the v1 hierarchy's that has the cpu controller. `path` is without its leading '/'.
struct CpuCgroupLine {
  bool v2 = false;
  std::string_view path;
};

/// Those lines of `cgroup_text`, in its order.
std::vector<CpuCgroupLine> cpu_cgroup_lines(std::string_view cgroup_text);

/// The smallest quota, in cores, of the cgroups a /proc/PID/cgroup text names and their
/// ancestors, read from the hierarchies below `sys` (fs/cgroup, fs/cgroup/unified for v2;
/// fs/cgroup/cpu, fs/cgroup/cpu,cpuacct for v1). nullopt when no cgroup has a quota.
std::optional<double> cgroup_text_cpu_quota(std::string_view cgroup_text, const FsRoot& sys);

/// The cgroup whose CPU quota binds a process: the one with the smallest quota among the
/// cgroups a /proc/PID/cgroup text names and their ancestors.
struct CgroupQuota {
  double cores = 0;
  std::string dir;  // below `sys`, e.g. "fs/cgroup/cpu/app"; its cpu.stat counts the throttling
};

/// That cgroup, found as cgroup_text_cpu_quota finds its quota; nullopt when none has one.
std::optional<CgroupQuota> cgroup_text_quota(std::string_view cgroup_text, const FsRoot& sys);

/// The same for process `pid` (PID/cgroup below `proc`).
std::optional<double> cgroup_cpu_quota(const FsRoot& proc, const FsRoot& sys, pid_t pid);

/// Quotas already read, by /proc/PID/cgroup text: the members of a group mostly share one.
using CgroupQuotaCache = std::map<std::string, std::optional<double>, std::less<>>;

/// The cores `pid` may use: the smaller of its affinity's CPU count and its cgroup quota.
/// nullopt when neither can be read (the process is gone). `cache` may be null. With
/// `cgroup_text`, the /proc/PID/cgroup text read is left there ("" when unreadable).
std::optional<double> process_cpu_limit(const FsRoot& proc, const FsRoot& sys, pid_t pid,
                                        CgroupQuotaCache* cache = nullptr,
                                        std::string* cgroup_text = nullptr);

/// The same with the /proc/PID/cgroup text read by the caller (through a kept fd: a fifth of
/// an open, read and close); `cgroup_text` is nullptr when it could not be read.
std::optional<double> process_cpu_limit_of_text(const FsRoot& proc, const FsRoot& sys, pid_t pid,
                                                const std::string* cgroup_text,
                                                CgroupQuotaCache* cache = nullptr);

}  // namespace loadwatch
