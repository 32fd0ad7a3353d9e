// libFuzzer harness: the CLI's readers of outside JSON. The first byte picks one: the bounded
// parser with typed access (src/util/bounded_json.cpp, under every reader), or a saved report
// as compare and report --file/--baseline load it (src/analysis/report_loader.cpp). Any input
// either parses within the caps or throws the documented error with a message: never a
// nlohmann type_error, a crash or a recursion deeper than the depth cap.
// clang-format off
// FUZZ_SOURCES: src/util/bounded_json.cpp src/analysis/report_loader.cpp src/analysis/capacity_report.cpp src/analysis/capacity_csv.cpp src/analysis/phase_stats.cpp src/analysis/phase_summary.cpp src/analysis/kneedle.cpp src/analysis/latency_knee.cpp src/analysis/usl_fit.cpp src/analysis/bottleneck.cpp src/analysis/series.cpp src/analysis/format_figures.cpp src/analysis/change_points.cpp src/analysis/generator_figures.cpp src/analysis/histogram_quantile.cpp
// FUZZ_LIBS: -I/usr/include/eigen3
// clang-format on
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/report_loader.h"
#include "util/bounded_json.h"

namespace {

std::size_t depth(const nlohmann::json& j) {
  std::size_t d = 0;
  if (j.is_structured()) {
    for (const auto& v : j) d = std::max(d, depth(v));  // bounded by the cap
    ++d;
  }
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    loadwatch::JsonLimits limits;
    limits.max_depth = 16;
    try {
      nlohmann::json j = loadwatch::parse_bounded_json(text, limits);
      if (depth(j) > limits.max_depth) __builtin_trap();
      for (const char* key : {"id", "data", "status", "phases"}) {
        try {
          (void)loadwatch::json_string_or(j, key);
        } catch (const loadwatch::JsonInputError&) {
        }
        try {
          (void)loadwatch::json_array_or_empty(j, key).size();
        } catch (const loadwatch::JsonInputError&) {
        }
      }
    } catch (const loadwatch::JsonInputError& e) {
      if (std::string(e.what()).empty()) __builtin_trap();
    }
  } else {
    try {
      (void)loadwatch::analysis::report_from_json(text);
    } catch (const loadwatch::analysis::ReportLoadError& e) {
      if (std::string(e.what()).empty()) __builtin_trap();
    }
  }
  return 0;
}
