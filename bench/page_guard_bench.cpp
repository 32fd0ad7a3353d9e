// page_guard_bench: what the sampler pays per sample for a valid /metrics page, on the page
// of a JMeter run of 1,000 transactions (5 quantiles each) beside 2,000 process series:
// guard_families (names, labels, UTF-8, repeats, caps) and serialize_text, next to
// prometheus-cpp's TextSerializer it replaced (same bytes, checked here). Single thread; CPU
// time of the thread, as the machines these run on are shared.
//
//   cmake --build build --target page_guard_bench && build/bench/page_guard_bench [rounds]
#include <prometheus/text_serializer.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cpu_clock.h"
#include "metrics/exposition.h"
#include "metrics/metric_sink.h"
#include "metrics/series_guard.h"

using namespace loadwatch;

namespace {

MetricSink jmeter_page() {
  MetricSink s;
  for (int t = 0; t < 1000; ++t) {
    Labels ep{{"source", "jmeter"}, {"name", "transaction number " + std::to_string(t)},
              {"method", ""}};
    s.counter("loadwatch_generator_endpoint_requests_total", "h", ep, t);
    s.counter("loadwatch_generator_endpoint_failures_total", "h", ep, t);
    auto& m = s.add("loadwatch_generator_endpoint_latency_seconds", "h",
                    prometheus::MetricType::Summary, ep);
    for (double q : {0.5, 0.9, 0.95, 0.99, 0.999}) m.summary.quantile.push_back({q, 0.1});
    s.gauge("loadwatch_generator_endpoint_latency_min_seconds", "h", ep, 1);
    s.gauge("loadwatch_generator_endpoint_latency_max_seconds", "h", ep, 1);
    s.gauge("loadwatch_generator_endpoint_latency_avg_seconds", "h", ep, 1);
  }
  for (int p = 0; p < 2000; ++p) {
    s.gauge("loadwatch_process_example", "h", {{"target", "t"}, {"pid", std::to_string(p)}}, p);
  }
  return s;
}

double seconds_since(double t0) { return bench::thread_cpu_seconds() - t0; }

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
  double guard = 0, ours = 0, theirs = 0;
  std::size_t series = 0, bytes = 0;
  for (int i = 0; i < rounds; ++i) {
    MetricSink sink = jmeter_page();
    SeriesOrigins origins;
    auto families = sink.take(origins);
    double t0 = bench::thread_cpu_seconds();
    GuardReport report;
    guard_families(families, &origins, GuardOptions{}, report);
    guard += seconds_since(t0);
    t0 = bench::thread_cpu_seconds();
    std::string text = serialize_text(families);
    ours += seconds_since(t0);
    t0 = bench::thread_cpu_seconds();
    std::string reference = prometheus::TextSerializer().Serialize(families);
    theirs += seconds_since(t0);
    if (text != reference || report.dropped_total() != 0) {
      std::fprintf(stderr, "page differs from prometheus-cpp's, or the guard dropped series\n");
      return 1;
    }
    series = 0;
    for (const auto& f : families) {
      for (const auto& m : f.metric) series += series_count(m, f.type);
    }
    bytes = text.size();
  }
  std::printf("page: %zu series, %zu bytes\n", series, bytes);
  std::printf("guard_families %.2f ms, serialize_text %.2f ms, prometheus-cpp %.2f ms (CPU, mean of %d)\n",
              guard / rounds * 1e3, ours / rounds * 1e3, theirs / rounds * 1e3, rounds);
  return 0;
}
