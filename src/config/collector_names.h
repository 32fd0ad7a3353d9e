#pragma once
// The names of the collectors, without the collectors: what config validation needs, so that
// parsing a config does not link every collector. collectors/table.cpp builds one collector
// per name, in this order; tests/unit/collectors/test_collector_table.cpp checks they agree.

#include <array>
#include <string_view>

namespace loadwatch {

inline constexpr std::array<std::string_view, 23> kCollectorNames = {
    "targets",    "throttling", "stat",    "softirqs",  "meminfo",  "vmstat",
    "pressure",   "loadavg",    "topcpu",  "filefd",    "tcp",      "netstat",
    "sockstat",   "sysctl",     "netdev",  "conntrack", "graphite", "influx",
    "locustpush", "textfile",   "sources", "http",      "runs",
};

/// True when `name` is one of kCollectorNames.
constexpr bool is_collector_name(std::string_view name) {
  for (std::string_view n : kCollectorNames) {
    if (n == name) return true;
  }
  return false;
}

}  // namespace loadwatch
