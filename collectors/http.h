#pragma once
// Collector "http": the web server's own limits at work - connections held, request body memory
// in use, and requests turned away by reason.

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Reads HttpServer::stats() of the daemon's server; adds nothing without one (tests).
std::unique_ptr<Collector> make_http_collector(const CollectorEnv& env);

}  // namespace loadwatch
