#pragma once
// Collector "sockstat": loadwatch_sockstat_tcp_* gauges from /proc/net/sockstat (+ sockstat6).

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Builds the "sockstat" collector (stateless).
std::unique_ptr<Collector> make_sockstat_collector(const CollectorEnv& env);

}  // namespace loadwatch
