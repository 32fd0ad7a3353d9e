#pragma once
// /proc/PID/io: I/O accounting of a process (proc(5), Documentation/filesystems/proc.rst).

#include <cstdint>
#include <optional>
#include <string_view>

namespace loadwatch {

/// All counters cover the whole thread group, dead threads included.
struct PidIo {
  std::uint64_t rchar = 0;        // bytes passed to read(2) and friends (incl. page cache)
  std::uint64_t wchar = 0;        // bytes passed to write(2) and friends
  std::uint64_t read_bytes = 0;   // bytes this process caused to be fetched from storage
  std::uint64_t write_bytes = 0;  // bytes this process caused to be sent to storage
  std::uint64_t cancelled_write_bytes = 0;
};

/// Parses the text of /proc/PID/io ("key: value" lines). Returns nullopt when neither
/// read_bytes nor write_bytes is present (a kernel without CONFIG_TASK_IO_ACCOUNTING prints
/// only the char counters); never throws.
std::optional<PidIo> parse_pid_io(std::string_view text);

}  // namespace loadwatch
