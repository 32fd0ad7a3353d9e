#include "procfs/pressure.h"

#include <stdexcept>
#include <string>

#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

Pressure parse_pressure(std::string_view text) {
  Pressure p;
  while (!text.empty()) {
    std::string_view line = next_line(text);
    std::string_view kind = next_field(line);
    if (kind.empty()) continue;
    std::optional<std::uint64_t>* slot = kind == "some"   ? &p.some_total_us
                                         : kind == "full" ? &p.full_total_us
                                                          : nullptr;
    if (!slot) throw std::runtime_error("unknown pressure line: " + quote(kind));
    std::optional<std::uint64_t> total;
    for (std::string_view f = next_field(line); !f.empty(); f = next_field(line)) {
      if (f.substr(0, 6) == "total=") total = to_u64(f.substr(6), "total");
    }
    if (!total) throw std::runtime_error(std::string(kind) + " line without total=");
    *slot = total;
  }
  if (!p.some_total_us && !p.full_total_us) throw std::runtime_error("no pressure line");
  return p;
}

}  // namespace loadwatch
