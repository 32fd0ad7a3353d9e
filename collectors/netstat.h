#pragma once
// Collector "netstat": TCP counters from /proc/net/netstat (TcpExt) and /proc/net/snmp (Tcp)
// as loadwatch_tcp_*_total. Both files count IPv4 and IPv6 together (one TCP MIB per netns).

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Builds the "netstat" collector (stateless).
std::unique_ptr<Collector> make_netstat_collector(const CollectorEnv& env);

}  // namespace loadwatch
