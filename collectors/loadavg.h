#pragma once
// Collector "loadavg": /proc/loadavg — the 1, 5 and 15 minute load averages.

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Builds the "loadavg" collector (stateless).
std::unique_ptr<Collector> make_loadavg_collector(const CollectorEnv& env);

}  // namespace loadwatch
