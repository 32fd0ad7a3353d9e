#include "procfs/sockstat.h"

#include <string>

#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

namespace {

/// Finds "PREFIX: k1 v1 k2 v2 ..." and returns the value of `key`; nullopt when absent.
std::optional<std::uint64_t> field_of(std::string_view text, std::string_view prefix,
                                      std::string_view key) {
  while (!text.empty()) {
    std::string_view line = next_line(text);
    if (next_field(line) != prefix) continue;
    for (;;) {
      std::string_view k = next_field(line);
      if (k.empty()) return std::nullopt;
      std::string_view v = next_field(line);
      if (k == key) return to_u64(v, std::string(prefix) + " " + std::string(key));
    }
  }
  return std::nullopt;
}

}  // namespace

SockstatTcp parse_sockstat(std::string_view text) {
  auto need = [&](std::string_view key) {
    auto v = field_of(text, "TCP:", key);
    if (!v) throw std::runtime_error("sockstat: TCP " + std::string(key) + " missing");
    return *v;
  };
  SockstatTcp s;
  s.inuse = need("inuse");
  s.orphan = need("orphan");
  s.tw = need("tw");
  s.alloc = need("alloc");
  s.mem_pages = need("mem");
  return s;
}

std::optional<std::uint64_t> parse_sockstat6_tcp_inuse(std::string_view text) {
  return field_of(text, "TCP6:", "inuse");
}

}  // namespace loadwatch
