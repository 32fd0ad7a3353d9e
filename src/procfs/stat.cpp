#include "procfs/stat.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

namespace {

std::uint64_t value_of(std::string_view name, std::string_view rest) {
  return to_u64(next_field(rest), name);
}

}  // namespace

ProcStat parse_stat(std::string_view text) {
  ProcStat st;
  while (!text.empty()) {
    std::string_view rest = next_line(text);
    std::string_view name = next_field(rest);
    if (name == "cpu" || name.empty()) continue;  // aggregate line: sum() in PromQL
    if (name.substr(0, 3) == "cpu") {
      std::string label(name);
      std::uint64_t index = to_u64(name.substr(3), label + " line name");
      if (index > std::numeric_limits<std::uint32_t>::max()) {
        throw std::runtime_error(label + ": CPU number out of range");
      }
      CpuTicks c;
      c.cpu = static_cast<std::uint32_t>(index);
      // proc(5): columns were added over time (iowait 2.5.41, irq/softirq 2.6.0, steal
      // 2.6.11, guest 2.6.24, guest_nice 2.6.33). Read what is there; later columns that a
      // newer kernel may add are ignored, not errors.
      for (std::string_view f = next_field(rest); !f.empty(); f = next_field(rest)) {
        if (c.modes == c.ticks.size()) break;
        c.ticks[c.modes++] = to_u64(f, label);
      }
      if (c.modes < 4) {
        throw std::runtime_error(label + ": " + std::to_string(c.modes) +
                                 " time columns, want at least 4 (user nice system idle)");
      }
      st.cpus.push_back(c);
    } else if (name == "ctxt") {
      st.context_switches = value_of(name, rest);
    } else if (name == "processes") {
      st.forks = value_of(name, rest);
    } else if (name == "procs_running") {
      st.procs_running = value_of(name, rest);
    } else if (name == "procs_blocked") {
      st.procs_blocked = value_of(name, rest);
    }
  }
  if (st.cpus.empty()) throw std::runtime_error("no cpuN line");
  std::sort(st.cpus.begin(), st.cpus.end(),
            [](const CpuTicks& a, const CpuTicks& b) { return a.cpu < b.cpu; });
  for (size_t i = 1; i < st.cpus.size(); ++i) {
    if (st.cpus[i].cpu == st.cpus[i - 1].cpu) {
      throw std::runtime_error("duplicate cpu" + std::to_string(st.cpus[i].cpu) + " line");
    }
  }
  return st;
}

}  // namespace loadwatch
