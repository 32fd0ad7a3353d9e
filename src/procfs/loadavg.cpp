#include "procfs/loadavg.h"

#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

LoadAvg parse_loadavg(std::string_view text) {
  // One line; the kernel prints fixed-point values as "%lu.%02lu" (fs/proc/loadavg.c), so a
  // plain decimal without exponent is all that is accepted.
  std::string_view line = next_line(text);
  LoadAvg l;
  l.load1 = to_nonneg_double(next_field(line), "load1");
  l.load5 = to_nonneg_double(next_field(line), "load5");
  l.load15 = to_nonneg_double(next_field(line), "load15");
  return l;
}

}  // namespace loadwatch
