// libFuzzer harness: InfluxDB line protocol bodies, through the parser and the JMeter model.
// clang-format off
// FUZZ_SOURCES: src/push/influx_line_protocol.cpp src/push/graphite_parser.cpp src/push/jmeter_model.cpp src/metrics/metric_sink.cpp src/sources/generator_families.cpp src/metrics/series_guard.cpp src/metrics/page_budget.cpp src/metrics/exposition.cpp
// clang-format on
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "push/influx_line_protocol.h"
#include "push/jmeter_model.h"

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  size_t last_line = 0, points = 0, errors = 0;
  loadwatch::parse_influx_lines(
      body,
      [&](const loadwatch::InfluxPoint& p) {
        // Every point has a measurement and a field; lines only move forward.
        check(!p.measurement.empty());
        check(!p.fields.empty());
        check(p.line > last_line || (points == 0 && errors == 0));
        for (const auto& t : p.tags) check(!t.key.empty());
        for (const auto& f : p.fields) check(!f.key.empty());
        last_line = p.line;
        ++points;
      },
      [&](const loadwatch::InfluxParseError& e) {
        check(e.line >= 1);
        check(e.text.size() <= 200);
        // The quoted text lies inside the body.
        check(e.text.empty() || (e.text.data() >= body.data() &&
                                 e.text.data() + e.text.size() <= body.data() + body.size()));
        ++errors;
      });
  // The same body through the model (as the /write handler does), then an export.
  loadwatch::JMeterModel model("influx", {4, 8});
  auto out = model.ingest_influx("fuzz", body, 1.0, 1);
  check(out.points == points);
  check(out.malformed == errors);
  loadwatch::MetricSink sink;
  model.collect(sink, 1.0);
  return 0;
}
