#include "report/run_report.h"

#include <algorithm>

namespace loadwatch::report {

analysis::RunInfo run_info(const Run& run) {
  analysis::RunInfo info;
  info.id = run.id;
  info.name = run.name;
  info.labels = run.labels;
  info.start = run.start;
  info.end = run.end;
  info.status = run_state_name(run.state);
  info.hosts = run.hosts;
  return info;
}

std::vector<analysis::PhaseWindow> phase_windows(const Run& run, double now) {
  std::vector<analysis::PhaseWindow> out;
  for (std::size_t i = 0; i < run.phases.size(); ++i) {
    const RunPhase& p = run.phases[i];
    out.push_back({p.name, p.users, p.start, run.phase_end(i).value_or(now)});
  }
  return out;
}

double report_end(const Run& run, double now) {
  return run.end ? std::min(*run.end + kLateSampleSeconds, std::max(now, *run.end)) : now;
}

analysis::CapacityReport report_for_run(const Run& run, SeriesSource& source, double now,
                                        const RunSeriesOptions& options,
                                        analysis::RunSeries* series_out) {
  // The last count before the end is often in a sample after it (the Locust listener's last
  // push, with the stop's push close behind). Rates pick their counts by the moment they
  // describe, and every other figure by its phase's window, so the extra samples change no
  // other figure.
  analysis::RunSeries series = load_run_series(source, run.start, report_end(run, now), options);
  auto report = analysis::report_from_series(run_info(run), phase_windows(run, now), series);
  if (series_out) *series_out = std::move(series);
  return report;
}

}  // namespace loadwatch::report
