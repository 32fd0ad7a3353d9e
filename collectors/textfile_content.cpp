#include "collectors/textfile_content.h"

#include "metrics/series_guard.h"
#include "sources/prom_text_parser.h"

namespace loadwatch {

TextfileContent parse_textfile(std::string_view text, std::size_t max_series) {
  TextfileContent out;
  PromTextLimits limits;
  // Sample lines bound what the parse holds; cap_series below makes the count exact.
  limits.max_series = max_series;
  PromTextParse parsed = parse_prom_text(text, limits);
  if (!parsed.ok()) {
    out.error = parsed.error;
    return out;
  }
  for (const auto& f : parsed.families) {
    for (const auto& m : f.metric) {
      if (m.timestamp_ms != 0) {
        out.error = "metric " + f.name + " has a client-side timestamp, which is not supported";
        return out;
      }
    }
  }
  out.dropped = std::move(parsed.dropped);
  count_drop(out.dropped, drop_reason::kMaxSeries, double(cap_series(parsed.families, max_series)));
  out.truncated = out.dropped.count(drop_reason::kMaxSeries) > 0;
  for (const auto& f : parsed.families) {
    for (const auto& m : f.metric) out.series += series_count(m, f.type);
  }
  out.families = std::move(parsed.families);
  return out;
}

}  // namespace loadwatch
