#pragma once
// Collector "vmstat": /proc/vmstat — pages swapped in and out.

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Builds the "vmstat" collector (stateless).
std::unique_ptr<Collector> make_vmstat_collector(const CollectorEnv& env);

}  // namespace loadwatch
