#include "analysis/phase_summary.h"

#include <algorithm>
#include <cstdio>

#include "analysis/generator_figures.h"

namespace loadwatch::analysis {

double WarmupRule::warmup_seconds(double phase_seconds) const {
  if (phase_seconds <= 0) return 0;
  double w = std::max(fraction * phase_seconds, min_seconds);
  return std::min(w, max_fraction * phase_seconds);
}

std::string WarmupRule::describe() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "first %g%% of the phase, at least %g s, at most %g%%",
                fraction * 100, min_seconds, max_fraction * 100);
  return buf;
}

namespace {

TargetPhaseStats summarize_target(const TargetSeries& s, double start, double stable, double end) {
  TargetPhaseStats t;
  t.name = s.name;
  t.cpu_cores = rate_in(s.cpu_seconds, stable, end);
  t.busiest_process_core_share = mean_in(s.busiest_process_cores, stable, end);
  t.cpu_limit_cores = s.cpu_limit_cores;
  t.rss_start_bytes = first_in(s.rss_bytes, start, end);
  t.rss_end_bytes = last_in(s.rss_bytes, start, end);
  t.rss_slope_bytes_per_second = slope_in(s.rss_bytes, start, end);
  t.open_fds_max = max_in(s.open_fds, start, end);
  t.fd_limit = min_in(s.max_fds, start, end);
  return t;
}

HostPhaseStats summarize_host(const HostSeries& s, double start, double stable, double end) {
  HostPhaseStats h;
  h.cores = s.cores;
  for (const auto& [mode, counter] : s.cpu_seconds_by_mode) {
    std::optional<double> cores = rate_in(counter, stable, end);
    if (!cores) continue;
    if (mode == "softirq") {
      h.softirq_cores = cores;
    } else {
      h.cpu_cores_by_mode[mode] = *cores;
    }
  }
  h.time_wait_max = max_in(s.time_wait, start, end);
  h.time_wait_limit = s.time_wait_limit;
  h.listen_overflows = increase_in(s.listen_overflows, start, end);
  h.ephemeral_port_ratio_max = max_in(s.ephemeral_port_ratio, start, end);
  return h;
}

std::optional<double> ratio_of(std::optional<double> part, std::optional<double> whole) {
  if (!part || !whole || *whole <= 0) return std::nullopt;
  return std::clamp(*part / *whole, 0.0, 1.0);
}

}  // namespace

PhaseStats summarize_phase(const PhaseWindow& window, const RunSeries& series,
                           const WarmupRule& warmup) {
  PhaseStats p;
  p.name = window.name;
  p.users = window.users;
  const double start = window.start, end = std::max(window.end, window.start);
  const double stable = start + warmup.warmup_seconds(end - start);
  p.start = start;
  p.end = end;
  p.duration_seconds = end - start;
  p.stable_start = stable;
  p.stable_seconds = end - stable;
  p.warmup_rule = warmup.describe();

  const GeneratorSeries& g = series.generator;
  summarize_generator(p, g, stable, end);
  // Without a rate the ratio of the two counters' rises still holds: they move together.
  if (!p.error_ratio) {
    p.error_ratio =
        ratio_of(increase_in(g.failures, stable, end), increase_in(g.requests, stable, end));
  }

  p.targets.reserve(series.targets.size());
  for (const TargetSeries& t : series.targets) {
    p.targets.push_back(summarize_target(t, start, stable, end));
  }
  p.host = summarize_host(series.host, start, stable, end);
  if (series.generator_target && p.target(*series.generator_target)) {
    p.generator_target = series.generator_target;
  }
  p.mock.p95_seconds = median_in(series.mock.p95_seconds, stable, end);
  p.mock.error_ratio = ratio_of(increase_in(series.mock.errors, stable, end),
                                increase_in(series.mock.requests, stable, end));
  return p;
}

CapacityReport report_from_series(std::optional<RunInfo> run, const std::vector<PhaseWindow>& phases,
                                  const RunSeries& series, const WarmupRule& warmup,
                                  const AnalysisOptions& options) {
  CapacityReport report;
  report.run = std::move(run);
  report.phases.reserve(phases.size());
  for (const PhaseWindow& w : phases) report.phases.push_back(summarize_phase(w, series, warmup));
  analyse(report, options);
  return report;
}

}  // namespace loadwatch::analysis
