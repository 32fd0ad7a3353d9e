#pragma once
// Collector "throttling": how often each target's cgroup CPU quota held it back (cpu.stat of
// the cgroup whose quota binds it; cgroup v2 or v1).

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Builds the "throttling" collector. Runs after "targets", whose members it reads.
std::unique_ptr<Collector> make_throttling_collector(const CollectorEnv& env);

}  // namespace loadwatch
