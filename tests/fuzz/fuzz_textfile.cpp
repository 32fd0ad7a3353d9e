// libFuzzer harness: what the textfile collector makes of a *.prom file (parse_textfile),
// and the page it ends up on.
// clang-format off
// FUZZ_SOURCES: collectors/textfile_content.cpp src/sources/prom_text_parser.cpp src/metrics/series_guard.cpp src/metrics/page_budget.cpp src/metrics/exposition.cpp src/metrics/metric_sink.cpp
// FUZZ_LIBS:
// clang-format on
//
// Checks the collector's contract on any bytes: a skipped file keeps nothing; otherwise at
// most the budget of series is kept (counted as series_count does), no label is longer than
// its cap, no sample carries a timestamp, and what is kept, exported beside loadwatch's own
// families, serializes into a page the strict parser accepts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "collectors/textfile_content.h"
#include "metrics/exposition.h"
#include "metrics/metric_sink.h"
#include "metrics/series_guard.h"
#include "sources/prom_text_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loadwatch;
  if (size < 1) return 0;
  std::size_t budget = data[0];  // 0..255: small, so the cap is reached
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  TextfileContent content = parse_textfile(text, budget);
  if (!content.error.empty()) {
    if (!content.families.empty() || content.series != 0) __builtin_trap();
    return 0;
  }
  std::size_t series = 0;
  for (const auto& f : content.families) {
    for (const auto& m : f.metric) {
      series += series_count(m, f.type);
      if (m.timestamp_ms != 0 || m.label.size() > kMaxLabelsPerSeries) __builtin_trap();
      for (const auto& l : m.label) {
        if (l.name.size() > kMaxLabelNameBytes || l.value.size() > kMaxLabelValueBytes)
          __builtin_trap();
      }
    }
    if (f.help.size() > kMaxHelpBytes) __builtin_trap();
  }
  if (series != content.series || series > budget) __builtin_trap();
  if (content.truncated != (content.dropped.count(drop_reason::kMaxSeries) > 0)) __builtin_trap();

  MetricSink sink;
  sink.gauge("loadwatch_load1", "1m load average.", {}, 0.5);
  sink.gauge("loadwatch_textfile_scrape_error", "Own.", {}, 0);
  sink.set_origin(1);
  for (auto& f : content.families) sink.foreign(std::move(f));
  SeriesOrigins origins;
  auto families = sink.take(origins);
  GuardReport report;
  guard_families(families, &origins, GuardOptions{}, report);
  std::string page = serialize_text(families);
  PromTextParse strict = parse_prom_text(page, PromTextLimits::strict_mode());
  if (!strict.ok()) {
    fprintf(stderr, "strict parse failed: %s\n--- page ---\n%.4000s\n", strict.error.c_str(),
            page.c_str());
    __builtin_trap();
  }
  return 0;
}
