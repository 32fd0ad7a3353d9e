// libFuzzer harness: Locust listener push bodies, through the bounded reader and the model,
// out to the exposition, which must stay valid whatever came in.
// clang-format off
// FUZZ_SOURCES: src/push/locust_push_parser.cpp src/push/locust_push_model.cpp src/sources/json_events.cpp src/sources/generator_families.cpp src/metrics/metric_sink.cpp src/metrics/series_guard.cpp src/metrics/page_budget.cpp src/metrics/exposition.cpp
// clang-format on
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "metrics/exposition.h"
#include "push/locust_push_model.h"
#include "push/locust_push_parser.h"
#include "sources/generator_families.h"

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  loadwatch::LocustPush push;
  std::string error;
  bool ok = loadwatch::parse_locust_push(body, push, error);
  // Refused: a reason naming what is wrong, and nothing half-read left behind.
  check(ok || (!error.empty() && push.source.empty() && push.steps.empty()));
  loadwatch::LocustPushModel model;
  if (ok) {
    // Taken: every figure within the documented ranges.
    check(loadwatch::valid_push_source_name(push.source));
    check(push.time >= 1e9 && push.time < 1e11);
    check(push.failures <= push.requests && push.requests <= 9007199254740992.0);
    check(push.steps.size() <= loadwatch::kLocustPushMaxSteps);
    check(push.duration_counts.empty() ||
          push.duration_counts.size() == loadwatch::request_duration_bounds().size() + 1);
    check(std::isfinite(push.duration_sum));
    check(model.ingest(push, 1.7e9).refused == nullptr);
  }
  loadwatch::MetricSink sink;
  model.collect(sink, 1.7e9);
  auto families = sink.take();
  std::string text = loadwatch::serialize_text(families);
  check(ok ? text.find("loadwatch_generator_requests_total{source=\"") != std::string::npos
           : text.find("loadwatch_generator_") == std::string::npos);
  return 0;
}
