#include "procfs/proc_pid_status.h"

#include <charconv>

#include "procfs/tokenizer.h"

namespace loadwatch {

namespace {

// "   1234 kB" or "\t17": leading blanks, a decimal, optional " kB".
std::optional<std::uint64_t> parse_value(std::string_view v, bool kilobytes) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p == v.data()) return std::nullopt;
  // fs/proc/task_mmu.c prints the Vm* lines with "%8lu kB" (always kibibytes).
  return kilobytes ? n * 1024 : n;
}

}  // namespace

PidStatus parse_pid_status(std::string_view text) {
  PidStatus out;
  while (!text.empty()) {
    const std::string_view line = host_parse::next_line(text);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    const std::string_view value = line.substr(colon + 1);
    // Only lines starting with V, v or n matter: skip the rest without comparing strings.
    switch (key.empty() ? '\0' : key.front()) {
      case 'V':
        if (key == "VmRSS")
          out.vm_rss_bytes = parse_value(value, true);
        else if (key == "VmHWM")
          out.vm_hwm_bytes = parse_value(value, true);
        else if (key == "VmSwap")
          out.vm_swap_bytes = parse_value(value, true);
        break;
      case 'v':
        if (key == "voluntary_ctxt_switches") {
          out.voluntary_ctxt_switches = parse_value(value, false).value_or(0);
        }
        break;
      case 'n':
        if (key == "nonvoluntary_ctxt_switches") {
          out.nonvoluntary_ctxt_switches = parse_value(value, false).value_or(0);
        }
        break;
      default:
        break;
    }
  }
  return out;
}

}  // namespace loadwatch
