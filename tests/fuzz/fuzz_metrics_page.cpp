// libFuzzer harness: arbitrary bytes through a push or a source into the sample, then the
// /metrics page checked by the project's parser in strict mode.
// clang-format off
// FUZZ_SOURCES: src/push/jmeter_model.cpp src/push/influx_line_protocol.cpp src/push/graphite_parser.cpp src/sources/prom_text_parser.cpp src/sources/prometheus.cpp src/sources/locust.cpp src/sources/locust_csv.cpp src/sources/mountebank.cpp src/sources/counter_carry.cpp src/sources/json_events.cpp src/sources/generator_families.cpp src/metrics/metric_sink.cpp src/metrics/series_guard.cpp src/metrics/page_budget.cpp src/metrics/exposition.cpp collectors/textfile_content.cpp
// FUZZ_LIBS:
// clang-format on
//
// The first byte picks the way in, as the daemon takes it:
//   0 Influx body (JMeterModel::ingest_influx, database from the second byte)
//   1 Graphite lines (parse_graphite_line + JMeterModel::ingest_graphite)
//   2 Prometheus source body (the prometheus kind's process(), then what the runner does)
//   3 Locust /stats/requests, or /stats/requests/csv + "\n\x00\n" + /stats/requests
//   4 Mountebank /imposters + "\n\x00\n" + /metrics
//   5 a textfile (parse_textfile)
// The families go into one MetricSink beside loadwatch's own (the same names a textfile or
// source might reuse), through guard_families and serialize_text. The page must then parse
// in strict mode: valid UTF-8, no series twice, HELP/TYPE once and before the samples,
// families contiguous, escapes valid. Models and scrapers keep their state across inputs,
// as they do across pushes and scrapes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/textfile_content.h"
#include "metrics/exposition.h"
#include "metrics/metric_sink.h"
#include "metrics/series_guard.h"
#include "push/jmeter_model.h"
#include "sources/locust.h"
#include "sources/mountebank.h"
#include "sources/prom_text_parser.h"
#include "sources/prometheus.h"

namespace {

using namespace loadwatch;

// Small caps, so the fuzzer reaches them.
JMeterModel::Limits small_limits() {
  JMeterModel::Limits l;
  l.max_sources = 4;
  l.max_transactions = 8;
  l.max_series = 160;
  l.max_series_per_source = 80;
  return l;
}

SourceConfig source_config() {
  SourceConfig c;
  c.name = "fuzz";
  c.url = "http://127.0.0.1:1";
  c.max_series = 100;
  return c;
}

// What SourceRunner does with a successful scrape's families (finish_scrape), then what the
// sources collector does: families a kind built are loadwatch's own, re-exported text is not.
void add_source(ScrapeResult& result, const std::string& kind, MetricSink& sink) {
  if (result.error != FetchError::None) return;
  GuardOptions options;
  options.fix_utf8 = false;
  GuardReport report;
  guard_families(result.families, nullptr, options, report);
  cap_series(result.families, source_config().max_series);
  for (auto& f : result.families) {
    if (kind != "prometheus" && f.name.rfind("loadwatch_", 0) == 0) {
      sink.family(std::move(f));
    } else {
      sink.foreign(std::move(f));
    }
  }
}

// loadwatch's own families, some with names a hostile input may reuse.
void add_own(MetricSink& sink) {
  sink.gauge("loadwatch_load1", "1m load average.", {}, 0.5);
  sink.gauge("loadwatch_build_info", "Build.", {{"version", "x"}}, 1);
  auto& m = sink.add("loadwatch_collector_duration_seconds", "Own summary.",
                     prometheus::MetricType::Summary, {{"collector", "fuzz"}});
  m.summary.quantile.push_back({0.5, 1});
}

void check_page(const std::vector<prometheus::MetricFamily>& families) {
  std::string page = serialize_text(families);
  PromTextParse strict = parse_prom_text(page, PromTextLimits::strict_mode());
  if (!strict.ok()) {
    fprintf(stderr, "strict parse failed: %s\n--- page ---\n%.4000s\n", strict.error.c_str(),
            page.c_str());
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static auto influx = std::make_shared<JMeterModel>("influx", small_limits());
  static auto graphite = std::make_shared<JMeterModel>("graphite", small_limits());
  static auto prometheus_kind = make_prometheus_scraper();
  static auto locust_kind = make_locust_scraper();
  static auto mountebank_kind = make_mountebank_scraper();
  std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);
  MetricSink sink;
  add_own(sink);
  sink.set_origin(1);
  SourceConfig cfg = source_config();
  std::vector<FetchResult> answers(1);
  switch (data[0] % 6) {
    case 0: {
      std::string db = "db" + std::to_string(data[1] % 8);
      if (data[1] >= 0xF0) db = std::string(body.substr(0, 40));  // any bytes as the name
      influx->ingest_influx(db, body, 1000.0 + data[1]);
      break;
    }
    case 1:
      while (!body.empty()) {
        size_t nl = body.find('\n');
        std::string_view line = body.substr(0, nl);
        GraphiteLine parsed;
        if (!graphite_line_blank(line) && !parse_graphite_line(line, parsed)) {
          graphite->ingest_graphite(parsed, 1000.0 + data[1]);
        }
        if (nl == std::string_view::npos) break;
        body.remove_prefix(nl + 1);
      }
      break;
    case 2: {
      answers[0].body.assign(body);
      ScrapeResult r = prometheus_kind->process(cfg, answers);
      add_source(r, "prometheus", sink);
      break;
    }
    case 3: {
      // "/stats/requests/csv \n\0\n /stats/requests", or the JSON alone.
      size_t split = body.find(std::string_view("\n\0\n", 3));
      answers[0].body.assign(body.substr(0, split));
      if (split != std::string_view::npos) {
        FetchResult json;
        json.body.assign(body.substr(split + 3));
        answers.push_back(std::move(json));
      }
      ScrapeResult r = locust_kind->process(cfg, answers);
      add_source(r, "locust", sink);
      break;
    }
    case 4: {
      size_t split = body.find(std::string_view("\n\0\n", 3));
      answers[0].body.assign(body.substr(0, split));
      FetchResult metrics;
      if (split != std::string_view::npos) {
        metrics.body.assign(body.substr(split + 3));
      } else {
        metrics.error = FetchError::HttpStatus;
        metrics.status = 404;
      }
      answers.push_back(std::move(metrics));
      ScrapeResult r = mountebank_kind->process(cfg, answers);
      add_source(r, "mountebank", sink);
      break;
    }
    default: {
      TextfileContent content = parse_textfile(body, 300);
      for (auto& f : content.families) sink.foreign(std::move(f));
      break;
    }
  }
  // The pushes export what they hold so far, whichever way this input went in.
  sink.set_origin(2);
  influx->collect(sink, 1.0);
  sink.set_origin(3);
  graphite->collect(sink, 1.0);

  SeriesOrigins origins;
  auto families = sink.take(origins);
  GuardReport report;
  guard_families(families, &origins, GuardOptions{}, report);
  check_page(families);
  return 0;
}
