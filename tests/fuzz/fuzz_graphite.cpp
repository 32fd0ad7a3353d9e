// libFuzzer harness: Graphite plaintext streams, line by line through the parser, JMeter's
// path split and the model, as the listener does.
// clang-format off
// FUZZ_SOURCES: src/push/graphite_parser.cpp src/push/influx_line_protocol.cpp src/push/jmeter_model.cpp src/metrics/metric_sink.cpp src/sources/generator_families.cpp src/metrics/series_guard.cpp src/metrics/page_budget.cpp src/metrics/exposition.cpp
// clang-format on
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "push/graphite_parser.h"
#include "push/jmeter_model.h"

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  loadwatch::JMeterModel model("graphite", {4, 8});
  while (!rest.empty()) {
    auto nl = rest.find('\n');
    auto line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    if (loadwatch::graphite_line_blank(line)) continue;
    loadwatch::GraphiteLine parsed;
    if (loadwatch::parse_graphite_line(line, parsed) != nullptr) continue;
    check(!parsed.path.empty());
    loadwatch::JMeterGraphitePath p;
    if (loadwatch::split_jmeter_graphite_path(parsed.path, p)) {
      check(!p.context.empty() && !p.metric.empty());
      auto q = loadwatch::percentile_to_quantile(p.metric.substr(p.metric.find('.') + 1));
      check(q.empty() || q == "0" || q == "1" || q.rfind("0.", 0) == 0);
    }
    model.ingest_graphite(parsed, 1.0);
  }
  loadwatch::MetricSink sink;
  model.collect(sink, 1.0);
  return 0;
}
