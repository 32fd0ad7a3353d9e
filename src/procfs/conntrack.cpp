#include "procfs/conntrack.h"

#include <stdexcept>
#include <string>

#include "procfs/sysctl.h"

namespace loadwatch {

ConntrackFill parse_conntrack(const FsRoot& proc, std::string_view count, std::string_view max) {
  auto number = [&](std::string_view relative, std::string_view text) {
    try {
      return parse_sysctl_number(text);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(proc.path(relative) + ": " + e.what());
    }
  };
  return ConntrackFill{number(kConntrackCountFile, count), number(kConntrackMaxFile, max)};
}

}  // namespace loadwatch
