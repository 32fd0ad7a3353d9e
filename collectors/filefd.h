#pragma once
// Collector "filefd": /proc/sys/fs/file-nr — file handles allocated and the system maximum.

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Builds the "filefd" collector (stateless).
std::unique_ptr<Collector> make_filefd_collector(const CollectorEnv& env);

}  // namespace loadwatch
