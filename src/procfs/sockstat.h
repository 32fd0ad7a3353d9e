#pragma once
// /proc/net/sockstat and sockstat6: the TCP socket counts, among them the exact host-wide
// time-wait count.

#include <cstdint>
#include <optional>
#include <string_view>

namespace loadwatch {

/// The TCP line of /proc/net/sockstat, "TCP: inuse 3 orphan 0 tw 13 alloc 3 mem 14", printed
/// by sockstat_seq_show() (net/ipv4/proc.c). Only `inuse` is IPv4-only (the TCP6 line of
/// sockstat6 has the IPv6 part); orphan, tw, alloc and mem are shared by both families.
/// `tw` is the number of time-wait mini sockets (tcp_death_row.tw_refcount - 1), whatever
/// their substate: TIME_WAIT, or FIN_WAIT2 for a closed socket waiting for the peer's FIN.
struct SockstatTcp {
  std::uint64_t inuse = 0;
  std::uint64_t orphan = 0;
  std::uint64_t tw = 0;
  std::uint64_t alloc = 0;
  std::uint64_t mem_pages = 0;  // tcp_memory_allocated, in pages
};

/// Parses /proc/net/sockstat text; throws std::runtime_error when the TCP line or one of its
/// five fields is missing or malformed.
SockstatTcp parse_sockstat(std::string_view text);

/// Parses /proc/net/sockstat6 text: the `inuse` of its "TCP6:" line; nullopt without one.
std::optional<std::uint64_t> parse_sockstat6_tcp_inuse(std::string_view text);

}  // namespace loadwatch
