#pragma once
// Collector "softirqs": /proc/softirqs, each softirq type summed over CPUs.

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Builds the "softirqs" collector (stateless).
std::unique_ptr<Collector> make_softirqs_collector(const CollectorEnv& env);

}  // namespace loadwatch
