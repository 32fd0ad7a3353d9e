#pragma once
// Collector "meminfo": /proc/meminfo — total, available and swap memory.

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Builds the "meminfo" collector (stateless).
std::unique_ptr<Collector> make_meminfo_collector(const CollectorEnv& env);

}  // namespace loadwatch
