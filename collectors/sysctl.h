#pragma once
// Collector "sysctl": loadwatch_sysctl{name} for the kernel tunables that explain network
// plateaus: accept-queue limits, TIME_WAIT handling and fd limits.

#include <memory>
#include <string_view>

#include "collectors/collector.h"

namespace loadwatch {

/// The sysctls exported, by dotted name; read from sys/<name with '.' -> '/'> below procfs.
inline constexpr std::string_view kExportedSysctls[] = {
    "net.core.somaxconn",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.tcp_tw_reuse",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_max_tw_buckets",
    "fs.file-max",
    "fs.nr_open",
};

/// Builds the "sysctl" collector (stateless). A sysctl whose file is missing (another kernel
/// version, a container without it) is left out quietly.
std::unique_ptr<Collector> make_sysctl_collector(const CollectorEnv& env);

}  // namespace loadwatch
