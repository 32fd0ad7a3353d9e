#include "procfs/sysctl.h"

#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

double parse_sysctl_number(std::string_view text) {
  std::string_view rest = text;
  std::string_view line = next_line(rest);  // one line: "4096\n"
  std::string_view v = next_field(line);
  if (!trim(line).empty() || !trim(rest).empty()) throw std::runtime_error("more than one value");
  return static_cast<double>(to_u64(v, "sysctl value"));
}

std::pair<std::uint32_t, std::uint32_t> parse_port_range(std::string_view text) {
  std::string_view rest = text;
  rest = next_line(rest);  // "32768\t60999\n"
  const std::uint64_t lo = to_u64(next_field(rest), "ip_local_port_range low");
  const std::uint64_t hi = to_u64(next_field(rest), "ip_local_port_range high");
  if (lo > 65535 || hi > 65535) throw std::runtime_error("ip_local_port_range: port above 65535");
  return {static_cast<std::uint32_t>(lo), static_cast<std::uint32_t>(hi)};
}

}  // namespace loadwatch
