#pragma once
// Sysctl files below /proc/sys: one number, or net.ipv4.ip_local_port_range's pair.

#include <cstdint>
#include <string_view>
#include <utility>

namespace loadwatch {

/// Parses a one-number sysctl file ("4096\n"); throws std::runtime_error otherwise.
/// fs.file-max may be printed as 9223372036854775807 (LONG_MAX): it fits in a double.
double parse_sysctl_number(std::string_view text);

/// Parses net.ipv4.ip_local_port_range ("32768\t60999\n") into {low, high}; throws
/// std::runtime_error when malformed or when a port is above 65535.
std::pair<std::uint32_t, std::uint32_t> parse_port_range(std::string_view text);

}  // namespace loadwatch
