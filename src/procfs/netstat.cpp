#include "procfs/netstat.h"

#include <charconv>
#include <stdexcept>

#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

std::unordered_map<std::string, std::int64_t> parse_netstat(std::string_view text) {
  std::unordered_map<std::string, std::int64_t> out;
  while (!text.empty()) {
    std::string_view names = next_line(text);
    if (trim(names).empty()) continue;
    if (text.empty()) throw std::runtime_error("header without values: " + quote(names));
    std::string_view values = next_line(text);
    std::string_view prefix = next_field(names);
    std::string_view vprefix = next_field(values);
    if (prefix.empty() || prefix.back() != ':' || prefix != vprefix) {
      throw std::runtime_error("mismatched line pair " + quote(prefix) + " / " + quote(vprefix));
    }
    prefix.remove_suffix(1);
    for (;;) {
      std::string_view name = next_field(names);
      std::string_view value = next_field(values);
      if (name.empty() && value.empty()) break;
      if (name.empty() || value.empty()) {
        throw std::runtime_error(std::string(prefix) + ": names and values differ in count");
      }
      std::int64_t v = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || p != value.data() + value.size()) {
        throw std::runtime_error(std::string(prefix) + "." + std::string(name) +
                                 ": not an integer: " + quote(value));
      }
      std::string key;
      key.reserve(prefix.size() + 1 + name.size());
      key.append(prefix).append(".").append(name);
      out[std::move(key)] = v;
    }
  }
  return out;
}

}  // namespace loadwatch
