#pragma once
// Collector "netstat": TCP counters from /proc/net/netstat (TcpExt) and /proc/net/snmp (Tcp)
// as loadwatch_tcp_*_total. Both files count IPv4 and IPv6 together (one TCP MIB per netns).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "collector.h"

namespace loadwatch {

/// Parses the "Prefix: Name1 Name2 ..." / "Prefix: v1 v2 ..." line pairs of /proc/net/netstat
/// and /proc/net/snmp into {"Prefix.Name": value}. Values are signed (snmp's Tcp MaxConn is
/// -1: RFC 2012 "dynamic"). Throws std::runtime_error when a header has no value line, the
/// prefixes differ, the counts differ, or a value is not an integer.
std::unordered_map<std::string, std::int64_t> parse_netstat(std::string_view text);

/// Builds the "netstat" collector (stateless).
std::unique_ptr<Collector> make_netstat_collector(const CollectorEnv& env);

}  // namespace loadwatch
