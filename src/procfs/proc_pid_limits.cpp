#include "procfs/proc_pid_limits.h"

#include <charconv>

#include "procfs/tokenizer.h"

namespace loadwatch {

using host_parse::next_field;

namespace {

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
    std::string_view line = host_parse::next_line(text);
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
