#include "procfs/proc_boot_time.h"

#include <charconv>

namespace loadwatch {

std::optional<std::uint64_t> parse_boot_time(std::string_view text) {
  constexpr std::string_view kKey = "btime ";
  size_t pos = 0;
  while (pos < text.size()) {
    const auto nl = text.find('\n', pos);
    const std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (line.substr(0, kKey.size()) != kKey) continue;
    std::string_view v = line.substr(kKey.size());
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || p == v.data()) return std::nullopt;
    return n;
  }
  return std::nullopt;
}

}  // namespace loadwatch
