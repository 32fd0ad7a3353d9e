#pragma once
// Collector "sysctl": loadwatch_sysctl{name} for the kernel tunables that explain network
// plateaus (PRODUCT.md): accept-queue limits, TIME_WAIT handling and fd limits.

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>

#include "collector.h"

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

/// Parses a one-number sysctl file ("4096\n"); throws std::runtime_error otherwise.
/// fs.file-max may be printed as 9223372036854775807 (LONG_MAX): it fits in a double.
double parse_sysctl_number(std::string_view text);

/// Parses net.ipv4.ip_local_port_range ("32768\t60999\n") into {low, high}; throws
/// std::runtime_error when malformed or when a port is above 65535.
std::pair<std::uint32_t, std::uint32_t> parse_port_range(std::string_view text);

/// Builds the "sysctl" collector (stateless). A sysctl whose file is missing (another kernel
/// version, a container without it) is left out quietly.
std::unique_ptr<Collector> make_sysctl_collector(const CollectorEnv& env);

}  // namespace loadwatch
