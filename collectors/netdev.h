#pragma once
// Collector "netdev": per-interface byte, packet, drop and error counters from /proc/net/dev.

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Builds the "netdev" collector (stateless).
std::unique_ptr<Collector> make_netdev_collector(const CollectorEnv& env);

}  // namespace loadwatch
