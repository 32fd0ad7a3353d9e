#pragma once
// /proc/stat: CPU time per CPU and mode, context switches, forks, running/blocked threads.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace loadwatch {

/// The modes exported, in /proc/stat column order (proc(5)). guest and guest_nice (columns 9
/// and 10) are not among them: the kernel already counts guest time in user and nice
/// (kernel/sched/cputime.c account_guest_time), so exporting them would double count.
inline constexpr std::array<const char*, 8> kCpuModes = {"user",   "nice", "system",  "idle",
                                                         "iowait", "irq",  "softirq", "steal"};

/// One "cpuN" line, in USER_HZ ticks (sysconf(_SC_CLK_TCK) per second).
struct CpuTicks {
  std::uint32_t cpu = 0;  // N of "cpuN"
  /// ticks[i] is the time in kCpuModes[i]; only the first `modes` entries are present.
  std::array<std::uint64_t, kCpuModes.size()> ticks{};
  /// Columns the kernel printed, capped at 8: 4 before 2.5.41 (no iowait), 7 before 2.6.11
  /// (no steal), 8 or more since.
  std::size_t modes = 0;
};

/// The parts of /proc/stat that loadwatch exports. Lines a kernel does not print (old
/// kernels lack procs_running/procs_blocked) are left empty, not zero.
struct ProcStat {
  std::vector<CpuTicks> cpus;  // online CPUs, ascending; offline CPUs have no line
  std::optional<std::uint64_t> context_switches;  // "ctxt"
  std::optional<std::uint64_t> forks;             // "processes": forks and clones since boot
  std::optional<std::uint64_t> procs_running;     // runnable threads
  std::optional<std::uint64_t> procs_blocked;     // threads in uninterruptible I/O wait
};

/// Parses /proc/stat text. The aggregate "cpu " line is skipped (sum() in PromQL gives it),
/// unknown lines (intr, softirq, btime, future additions) are ignored. Throws
/// std::runtime_error on malformed input: no cpuN line, a cpuN line with fewer than 4
/// numbers, a duplicate cpuN, a non-numeric value on a line that is read.
ProcStat parse_stat(std::string_view text);

}  // namespace loadwatch
