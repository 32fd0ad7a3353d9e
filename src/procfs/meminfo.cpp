#include "procfs/meminfo.h"

#include <limits>
#include <stdexcept>
#include <string>

#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

namespace {

// "Key:   123 kB". The kernel's "kB" is KiB (fs/proc/meminfo.c show_val_kb shifts by 10);
// the HugePages_* counts have no unit.
std::uint64_t bytes_of(std::string_view key, std::string_view rest) {
  const std::uint64_t v = to_u64(next_field(rest), key);
  const std::string_view unit = next_field(rest);
  if (unit.empty()) return v;
  if (unit != "kB" || !next_field(rest).empty()) {
    throw std::runtime_error(std::string(key) + ": unexpected unit " + quote(unit));
  }
  if (v > std::numeric_limits<std::uint64_t>::max() / 1024) {
    throw std::runtime_error(std::string(key) + ": value out of range");
  }
  return v * 1024;
}

}  // namespace

MemInfo parse_meminfo(std::string_view text) {
  MemInfo m;
  bool have_total = false;
  while (!text.empty()) {
    std::string_view line = next_line(text);
    if (trim(line).empty()) continue;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos)
      throw std::runtime_error("line without ':': " + quote(line));
    const std::string_view key = line.substr(0, colon);
    const std::string_view rest = line.substr(colon + 1);
    if (key == "MemTotal") {
      m.total_bytes = bytes_of(key, rest);
      have_total = true;
    } else if (key == "MemAvailable") {
      m.available_bytes = bytes_of(key, rest);
    } else if (key == "SwapTotal") {
      m.swap_total_bytes = bytes_of(key, rest);
    } else if (key == "SwapFree") {
      m.swap_free_bytes = bytes_of(key, rest);
    }
  }
  if (!have_total) throw std::runtime_error("no MemTotal line");
  return m;
}

}  // namespace loadwatch
