// libFuzzer harness: the pull-source JSON parsers and mappers (Locust /stats/requests,
// Mountebank /imposters and /config). The first byte picks the parser: even = Locust, odd =
// Mountebank.
// clang-format off
// FUZZ_SOURCES: src/sources/locust.cpp src/sources/locust_csv.cpp src/sources/mountebank.cpp src/sources/prometheus.cpp src/sources/counter_carry.cpp src/metrics/metric_sink.cpp src/sources/prom_text_parser.cpp src/sources/json_events.cpp src/sources/generator_families.cpp src/metrics/series_guard.cpp src/metrics/page_budget.cpp src/metrics/exposition.cpp
// FUZZ_LIBS:
// clang-format on
//
// The mappers keep state across inputs here, as across scrapes in the daemon, and every
// exported counter (and summary _count/_sum) must never go down: that is the contract the
// counter carry exists for, whatever the peer sends.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "sources/locust.h"
#include "sources/mountebank.h"

namespace {

std::string series_key(const prometheus::MetricFamily& f, const prometheus::ClientMetric& m,
                       const char* part) {
  std::string k = f.name + part;
  for (const auto& l : m.label) k += "\x1f" + l.name + "=" + l.value;
  return k;
}

void check_monotonic(const std::vector<prometheus::MetricFamily>& fams) {
  static std::map<std::string, double> last;
  if (last.size() > 200000) last.clear();  // bounded memory over a long run
  auto check = [&](const std::string& key, double v) {
    if (std::isnan(v)) __builtin_trap();
    auto [it, inserted] = last.try_emplace(key, v);
    if (!inserted) {
      if (v < it->second) __builtin_trap();
      it->second = v;
    }
  };
  for (const auto& f : fams) {
    for (const auto& m : f.metric) {
      if (f.type == prometheus::MetricType::Counter) check(series_key(f, m, ""), m.counter.value);
      if (f.type == prometheus::MetricType::Summary) {
        check(series_key(f, m, "_count"), double(m.summary.sample_count));
        check(series_key(f, m, "_sum"), m.summary.sample_sum);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static loadwatch::LocustMapper locust;
  static loadwatch::MountebankMapper mountebank;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string error;
  loadwatch::MetricSink sink;
  if (data[0] % 2 == 0) {
    loadwatch::LocustStats stats;
    if (!loadwatch::parse_locust_stats(text, stats, error)) {
      if (error.empty()) __builtin_trap();
      return 0;
    }
    locust.map(stats, "fuzz", sink);
    locust.end_scrape(size_t(1) << 40);  // never forget: forgetting may restart a counter
  } else {
    // The same bytes as a /config body: a restart it shows must not lower a counter either.
    if (auto uptime = loadwatch::parse_mountebank_uptime(text)) {
      mountebank.note_uptime(*uptime, static_cast<double>(size), 0);
    }
    std::vector<loadwatch::MountebankImposter> imposters;
    if (!loadwatch::parse_mountebank_imposters(text, imposters, error)) {
      if (error.empty()) __builtin_trap();
      return 0;
    }
    mountebank.map(imposters, nullptr, "fuzz", sink);
    mountebank.end_scrape(size_t(1) << 40);
  }
  check_monotonic(sink.take());
  return 0;
}
