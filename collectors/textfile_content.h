#pragma once
// What the textfile collector makes of one *.prom file's text: pure, so it is tested and
// fuzzed on literals.

#include <prometheus/metric_family.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/series_limits.h"

namespace loadwatch {

struct TextfileContent {
  std::vector<prometheus::MetricFamily> families;
  /// Why the whole file is skipped (a parse error, a client-side timestamp); empty if not.
  std::string error;
  /// Series kept, counted as series_count does.
  std::size_t series = 0;
  /// Series read but not kept (label caps, quantile/bucket caps, max_series), by reason.
  DropCounts dropped;
  /// max_series cut something: a larger budget later needs a new parse.
  bool truncated = false;
};

/// Parses the text format (parse_prom_text with the default label caps) and keeps at most
/// `max_series` series, in file order. As node_exporter does, a file that does not parse or
/// carries client-side timestamps is skipped whole. Never throws but std::bad_alloc.
TextfileContent parse_textfile(std::string_view text, std::size_t max_series);

}  // namespace loadwatch
