#pragma once
// Listening sockets in /proc/net/tcp and /proc/net/tcp6 (proc(5), "tcp"), as needed by the
// port: selector: which socket inodes listen on a given local port.

#include <cstdint>
#include <string_view>
#include <vector>

namespace loadwatch {

/// Scans /proc/net/tcp or tcp6 text for LISTEN rows (st 0A) whose local port is `port` and
/// appends their socket inodes to `inodes`. Returns true when a row in another state was
/// seen: the kernel prints the listening hash before the established one
/// (net/ipv4/tcp_ipv4.c tcp_get_idx), so the caller may stop reading at that point.
/// Malformed rows are skipped; never throws.
bool parse_tcp_listen_inodes(std::string_view text, std::uint16_t port,
                             std::vector<std::uint64_t>& inodes);

}  // namespace loadwatch
