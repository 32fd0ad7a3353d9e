#pragma once
// Collector "stat": /proc/stat — CPU time per CPU and mode, context switches, forks,
// running/blocked threads.

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Builds the "stat" collector. The collector keeps the last exported value of each
/// (cpu, mode) to hold back counters that the kernel lets go backwards (see stat.cpp).
std::unique_ptr<Collector> make_stat_collector(const CollectorEnv& env);

}  // namespace loadwatch
