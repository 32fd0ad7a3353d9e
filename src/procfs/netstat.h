#pragma once
// /proc/net/netstat (TcpExt ...) and /proc/net/snmp (Tcp ...): "Prefix: names" / "Prefix: values"
// line pairs. Both files count IPv4 and IPv6 together (one TCP MIB per network namespace).

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace loadwatch {

/// Parses the "Prefix: Name1 Name2 ..." / "Prefix: v1 v2 ..." line pairs of /proc/net/netstat
/// and /proc/net/snmp into {"Prefix.Name": value}. Values are signed (snmp's Tcp MaxConn is
/// -1: RFC 2012 "dynamic"). Throws std::runtime_error when a header has no value line, the
/// prefixes differ, the counts differ, or a value is not an integer.
std::unordered_map<std::string, std::int64_t> parse_netstat(std::string_view text);

}  // namespace loadwatch
