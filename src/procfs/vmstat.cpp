#include "procfs/vmstat.h"

#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

VmSwapCounters parse_vmstat_swap(std::string_view text) {
  VmSwapCounters c;
  while (!text.empty()) {
    std::string_view line = next_line(text);
    std::string_view name = next_field(line);
    if (name == "pswpin") {
      c.pswpin = to_u64(next_field(line), "pswpin");
    } else if (name == "pswpout") {
      c.pswpout = to_u64(next_field(line), "pswpout");
    }
  }
  return c;
}

}  // namespace loadwatch
