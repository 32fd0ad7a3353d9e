#include "report/prometheus_run.h"

#include <algorithm>
#include <cmath>

namespace loadwatch::report {

namespace {

bool names(const std::string& id, const std::string& ref) {
  if (id == ref) return true;
  return id.size() > ref.size() + 1 && id.compare(id.size() - ref.size(), ref.size(), ref) == 0 &&
         id[id.size() - ref.size() - 1] == '-';
}

}  // namespace

Run find_prometheus_run(SeriesSource& source, const std::string& ref, double now, double lookback) {
  double from = now - lookback;
  Run run;
  double newest = -1;
  for (const auto& s : source.fetch("loadwatch_run_start_timestamp_seconds", {}, from, now)) {
    auto it = s.labels.find("run");
    if (it == s.labels.end() || s.series.empty() || !names(it->second, ref)) continue;
    if (s.series.v.back() > newest) {
      newest = s.series.v.back();
      run.id = it->second;
      run.start = newest;
    }
  }
  if (run.id.empty()) {
    throw SeriesSourceError("no run \"" + ref + "\" in loadwatch_run_start_timestamp_seconds");
  }
  run.name = ref;
  std::map<std::string, std::string> match{{"run", run.id}};
  for (const auto& s : source.fetch("loadwatch_run_phase_start_timestamp_seconds", match, from, now)) {
    auto it = s.labels.find("phase");
    if (it == s.labels.end() || s.series.empty()) continue;
    run.phases.push_back({it->second, s.series.v.back(), std::nullopt});
  }
  for (const auto& s : source.fetch("loadwatch_run_phase_users", match, from, now)) {
    auto it = s.labels.find("phase");
    if (it == s.labels.end() || s.series.empty()) continue;
    for (auto& p : run.phases) {
      if (p.name == it->second) p.users = std::llround(s.series.v.back());
    }
  }
  std::sort(run.phases.begin(), run.phases.end(),
            [](const RunPhase& a, const RunPhase& b) { return a.start < b.start; });
  // The end: as the daemon exported it once the run finished, else the last sample of the run.
  std::optional<double> end;
  for (const auto& s : source.fetch("loadwatch_run_end_timestamp_seconds", match, from, now)) {
    if (!s.series.empty()) end = s.series.v.back();
  }
  if (!end) {
    for (const auto& s : source.fetch("loadwatch_run_info", match, from, now)) {
      if (!s.series.empty()) end = std::max(end.value_or(0), s.series.t.back());
    }
  }
  run.end = end.value_or(now);
  run.state = RunState::Finished;
  return run;
}

}  // namespace loadwatch::report
