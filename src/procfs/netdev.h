#pragma once
// /proc/net/dev: per-interface byte, packet, drop and error counters.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loadwatch {

/// One interface line of /proc/net/dev (dev_seq_printf_stats(), net/core/net-procfs.c).
struct NetDevStats {
  std::string device;
  std::uint64_t rx_bytes = 0, rx_packets = 0, rx_errors = 0, rx_drop = 0;
  std::uint64_t tx_bytes = 0, tx_packets = 0, tx_errors = 0, tx_drop = 0;
};

/// Parses /proc/net/dev text: two header lines, then "NAME: 16 numbers" per interface (the
/// name is right-aligned and may touch the colon: "eth0:123"). Throws std::runtime_error on a
/// malformed interface line.
std::vector<NetDevStats> parse_netdev(std::string_view text);

}  // namespace loadwatch
