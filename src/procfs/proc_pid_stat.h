#pragma once
// /proc/PID/stat: one line of blank-separated fields describing a process (proc(5)).

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace loadwatch {

/// The fields of /proc/PID/stat that loadwatch uses. Field numbers are proc(5)'s (1-based).
struct PidStat {
  pid_t pid = 0;                 // (1)
  std::string comm;              // (2) without the parentheses; may contain blanks and ')'
  char state = '?';              // (3) R S D Z T t X I ...
  pid_t ppid = 0;                // (4)
  std::uint64_t minflt = 0;      // (10) minor faults, the whole thread group
  std::uint64_t majflt = 0;      // (12) major faults
  std::uint64_t utime = 0;       // (14) user time, clock ticks (sysconf(_SC_CLK_TCK))
  std::uint64_t stime = 0;       // (15) system time, clock ticks
  std::int64_t nice = 0;         // (19) -20 (most favoured) .. 19 (least), 0 by default
  std::int64_t num_threads = 0;  // (20)
  std::uint64_t starttime = 0;   // (22) clock ticks after boot
  std::uint64_t vsize = 0;       // (23) bytes
  std::int64_t rss = 0;          // (24) pages
  std::uint64_t startstack = 0;  // (28) 0 unless the reader may ptrace the process
  std::uint64_t arg_start = 0;   // (48, Linux 3.5+) 0 unless the reader may ptrace the process

  /// True for a zombie (or dead) process whose whole thread group has exited. A leader
  /// that exited while other threads run also shows 'Z', but still has num_threads > 1.
  bool exited() const { return (state == 'Z' && num_threads <= 1) || state == 'X'; }

  /// Changes when the process calls execve() (a new stack and argument block; with ASLR
  /// their addresses differ on every exec), so a match on exe/cmdline can be cached until
  /// then. 0 when the reader may not see these addresses.
  std::uint64_t exec_signature() const { return startstack * 31 + arg_start; }
};

/// Parses the text of /proc/PID/stat. comm is taken up to the LAST ')' of the line, since
/// a process may name itself "a b) c" (prctl PR_SET_NAME) and the kernel does not escape
/// it. Fields missing on old kernels (arg_start) stay 0. Returns nullopt on malformed text;
/// never throws.
std::optional<PidStat> parse_pid_stat(std::string_view text);

}  // namespace loadwatch
