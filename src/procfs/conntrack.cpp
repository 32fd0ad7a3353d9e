#include "procfs/conntrack.h"

#include <stdexcept>
#include <string>

#include "procfs/sysctl.h"

namespace loadwatch {

std::optional<ConntrackFill> read_conntrack(const FsRoot& proc) {
  static constexpr std::string_view kCount = "sys/net/netfilter/nf_conntrack_count";
  static constexpr std::string_view kMax = "sys/net/netfilter/nf_conntrack_max";
  std::string count, max;
  if (proc.read(kCount, count) != 0 || proc.read(kMax, max) != 0) return std::nullopt;
  auto number = [&](std::string_view relative, const std::string& text) {
    try {
      return parse_sysctl_number(text);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(proc.path(relative) + ": " + e.what());
    }
  };
  return ConntrackFill{number(kCount, count), number(kMax, max)};
}

}  // namespace loadwatch
