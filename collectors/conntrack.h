#pragma once
// Collector "conntrack": netfilter connection-tracking table fill, when nf_conntrack is
// loaded (sys/net/netfilter/nf_conntrack_{count,max}). A full table drops new connections
// ("nf_conntrack: table full, dropping packet"), a classic load-test plateau.

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Builds the "conntrack" collector (stateless). Without the files (module not loaded) it
/// adds nothing: "no data", not an error.
std::unique_ptr<Collector> make_conntrack_collector(const CollectorEnv& env);

}  // namespace loadwatch
