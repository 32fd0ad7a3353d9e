#include "procfs/proc_pid_io.h"

#include <charconv>

#include "procfs/tokenizer.h"

namespace loadwatch {

std::optional<PidIo> parse_pid_io(std::string_view text) {
  PidIo io;
  bool storage = false;
  while (!text.empty()) {
    const std::string_view line = host_parse::next_line(text);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    std::string_view v = line.substr(colon + 1);
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || p == v.data()) continue;
    if (key == "rchar")
      io.rchar = n;
    else if (key == "wchar")
      io.wchar = n;
    else if (key == "read_bytes")
      io.read_bytes = n, storage = true;
    else if (key == "write_bytes")
      io.write_bytes = n, storage = true;
    else if (key == "cancelled_write_bytes")
      io.cancelled_write_bytes = n;
  }
  if (!storage) return std::nullopt;
  return io;
}

}  // namespace loadwatch
