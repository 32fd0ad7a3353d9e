// libFuzzer harness: a Prometheus server's /api/v1/query_range and /api/v1/query answers as
// `loadwatch report --prometheus` reads them (src/report/prometheus_series_source.cpp). Any
// input either gives series of finite points or throws SeriesSourceError with a message:
// never another exception, a crash or a recursion that grows with the input's depth.
// clang-format off
// FUZZ_SOURCES: src/report/prometheus_series_source.cpp src/report/series_source.cpp src/analysis/series.cpp src/util/bounded_json.cpp src/util/printable.cpp
// FUZZ_LIBS:
// clang-format on
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "report/prometheus_series_source.h"

// The answers are parsed from memory: nothing here fetches, so the fetcher (libcurl, the
// build's version.h) stays out of the harness.
namespace loadwatch {
HttpFetcher::HttpFetcher(const std::atomic<bool>*) {}
HttpFetcher::~HttpFetcher() = default;
FetchResult HttpFetcher::get(const std::string&, const FetchOptions&) { __builtin_trap(); }
}  // namespace loadwatch

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    auto series = data[0] % 2 == 0 ? loadwatch::report::parse_query_range(body)
                                   : loadwatch::report::parse_query_vector(body);
    for (const auto& s : series) {
      for (std::size_t i = 0; i < s.series.v.size(); ++i) {
        if (!std::isfinite(s.series.v[i])) __builtin_trap();
      }
    }
  } catch (const loadwatch::report::SeriesSourceError& e) {
    if (std::string(e.what()).empty()) __builtin_trap();
  }
  return 0;
}
