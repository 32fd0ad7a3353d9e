// libFuzzer harness: the query of GET /api/v1/history (src/routes/history_query.cpp),
// decoded as the server decodes it (web/query_string.h), then run against a small history.
// Any query string either gives a query whose answer keeps the history's invariants, or a
// message for a 400 that is JSON-safe whatever bytes it quotes: never a 500.
// clang-format off
// FUZZ_SOURCES: src/routes/history_query.cpp src/history/history.cpp src/metrics/exposition.cpp src/web/query_string.cpp
// FUZZ_LIBS:
// clang-format on
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "history/history.h"
#include "routes/history_query.h"
#include "web/query_string.h"

namespace {

prometheus::MetricFamily family(const char* name, prometheus::MetricType type, double v) {
  prometheus::MetricFamily f{name, "help", type, {}};
  prometheus::ClientMetric m;
  m.label = {{"target", "app"}, {"mode", "user"}};
  m.gauge.value = v;
  m.counter.value = v;
  f.metric.push_back(m);
  return f;
}

const loadwatch::History& history() {
  static const loadwatch::History* h = [] {
    auto* made = new loadwatch::History();  // lives as long as the fuzzer
    for (int i = 0; i < 20; ++i) {
      made->record({family("loadwatch_cpu_seconds_total", prometheus::MetricType::Counter, i),
                    family("loadwatch_load1", prometheus::MetricType::Gauge, i % 3)},
                   1000 + i);
    }
    return made;
  }();
  return *h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string query(reinterpret_cast<const char*>(data), size);
  auto param = [&query](const std::string& name) {
    auto values = loadwatch::query_values(query, name, 1);
    return values.empty() ? std::string() : values.front();
  };
  loadwatch::HistoryQuery q;
  if (auto why = loadwatch::read_history_query(param, q)) {
    if (why->empty() || why->size() > 400) __builtin_trap();
    // What the route writes: invalid UTF-8 replaced, never an exception.
    (void)nlohmann::json{{"error", *why}}.dump(-1, ' ', false,
                                               nlohmann::json::error_handler_t::replace);
    return 0;
  }
  if (q.select.empty() || q.select.size() > loadwatch::kHistoryMaxSeriesPerRequest) {
    __builtin_trap();
  }
  auto cols = history().query(q);
  if (cols.series.size() > q.max_series || cols.values.size() != cols.series.size()) {
    __builtin_trap();
  }
  for (const auto& col : cols.values) {
    if (col.size() != cols.time.size()) __builtin_trap();
  }
  return 0;
}
