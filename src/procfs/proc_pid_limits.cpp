#include "procfs/proc_pid_limits.h"

#include <charconv>

namespace loadwatch {

namespace {

std::string_view next_field(std::string_view& rest) {
  size_t b = 0;
  while (b < rest.size() && rest[b] == ' ') ++b;
  size_t e = b;
  while (e < rest.size() && rest[e] != ' ') ++e;
  std::string_view f = rest.substr(b, e - b);
  rest = rest.substr(e);
  return f;
}

std::optional<std::uint64_t> limit_value(std::string_view f) {
  if (f == "unlimited") return OpenFilesLimit::kUnlimited;
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), n);
  if (f.empty() || ec != std::errc() || p != f.data() + f.size()) return std::nullopt;
  return n;
}

}  // namespace

std::optional<OpenFilesLimit> parse_max_open_files(std::string_view text) {
  // fs/proc/base.c proc_pid_limits prints "%-25s %-20s %-20s %-10s": the name has blanks
  // in it, so rows are found by their name prefix, not split on blanks.
  constexpr std::string_view kRow = "Max open files";
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (line.substr(0, kRow.size()) != kRow) continue;
    std::string_view rest = line.substr(kRow.size());
    auto soft = limit_value(next_field(rest));
    auto hard = limit_value(next_field(rest));
    if (!soft || !hard) return std::nullopt;
    return OpenFilesLimit{*soft, *hard};
  }
  return std::nullopt;
}

}  // namespace loadwatch
