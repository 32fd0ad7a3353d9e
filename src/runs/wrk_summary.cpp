#include "runs/wrk_summary.h"

#include <cmath>
#include <map>
#include <optional>
#include <string>

namespace loadwatch {

namespace {

const std::string* run_label(const prometheus::ClientMetric& m) {
  for (const auto& l : m.label) {
    if (l.name == "run") return &l.value;
  }
  return nullptr;
}

}  // namespace

void report_wrk_summaries(const std::vector<prometheus::MetricFamily>& families, double file_mtime,
                          RunObserver& runs) {
  struct Summary {
    std::optional<double> end, duration;
  };
  std::map<std::string, Summary> found;
  for (const auto& f : families) {
    if (f.name.rfind("loadwatch_wrk_", 0) != 0) continue;
    for (const auto& m : f.metric) {
      const std::string* run = run_label(m);
      if (!run) continue;
      Summary& s = found[*run];
      if (f.name == "loadwatch_wrk_last_run_timestamp_seconds") s.end = m.gauge.value;
      if (f.name == "loadwatch_wrk_duration_seconds") s.duration = m.gauge.value;
    }
  }
  for (const auto& [run, s] : found) {
    double end = s.end && std::isfinite(*s.end) && *s.end > 0 ? *s.end : file_mtime;
    double duration = s.duration && std::isfinite(*s.duration) && *s.duration > 0 ? *s.duration : 0;
    runs.finished_run_seen("wrk:" + run, run, end - duration, end);
  }
}

}  // namespace loadwatch
