// The fixed /metrics body every bench server answers with: ~100 KB of exposition text, built
// once, so the benchmarks compare the HTTP layers and nothing else.
#pragma once

#include <string>

inline const std::string& metrics_body() {
  static const std::string body = [] {
    std::string s;
    for (int i = 0; s.size() < 100 * 1000; ++i) {
      s += "bench_series_value{target=\"t" + std::to_string(i % 7) + "\",series=\"" +
           std::to_string(i) + "\"} " + std::to_string(i * 37 % 1000003) + "\n";
    }
    return s;
  }();
  return body;
}
