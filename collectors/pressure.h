#pragma once
// Collector "pressure": /proc/pressure/{cpu,memory,io} — how long tasks stalled waiting for
// the CPU, memory or I/O (pressure stall information, Linux >= 4.20).

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Builds the "pressure" collector (stateless). A kernel without PSI gives no data.
std::unique_ptr<Collector> make_pressure_collector(const CollectorEnv& env);

}  // namespace loadwatch
