#include "analysis/phase_summary.h"

#include <algorithm>
#include <cmath>
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
  t.nice = max_in(s.nice, stable, end);
  t.rss_start_bytes = first_in(s.rss_bytes, start, end);
  t.rss_end_bytes = last_in(s.rss_bytes, start, end);
  t.rss_slope_bytes_per_second = slope_in(s.rss_bytes, start, end);
  t.open_fds_max = max_in(s.open_fds, start, end);
  t.fd_limit = min_in(s.max_fds, start, end);
  auto periods = increase_in(s.cpu_periods, stable, end);
  auto throttled = increase_in(s.cpu_throttled_periods, stable, end);
  if (periods && throttled && *periods > 0) {
    t.throttled_period_ratio = std::clamp(*throttled / *periods, 0.0, 1.0);
  }
  t.throttled_seconds_per_second = rate_in(s.cpu_throttled_seconds, stable, end);
  return t;
}

/// The share of the window a PSI counter (seconds stalled) grew by, 0..1.
std::optional<double> stall_share(const Series& counter, double from, double to) {
  auto r = rate_in(counter, from, to);
  if (!r) return std::nullopt;
  return std::clamp(*r, 0.0, 1.0);
}

// Modes not spent running anything: idle and iowait; steal is time the hypervisor gave to
// another guest; guest time is already inside user and nice.
bool busy_mode(const std::string& mode) {
  return mode != "idle" && mode != "iowait" && mode != "steal" && mode != "guest" &&
         mode != "guest_nice";
}

/// The busiest process names' mean cores over [from, to]. A name is exported only while among
/// the busiest, so a sample without it counts as 0 (it used less than the last one shown);
/// the samples are the host's (the run queue's). The kTopCpuNamesKept busiest are kept.
std::map<std::string, double> top_cpu(const HostSeries& s, double from, double to) {
  constexpr std::size_t kTopCpuNamesKept = 5;
  std::map<std::string, double> out;
  const std::size_t samples = points_in(s.procs_running, from, to).size();
  if (samples == 0) return out;
  std::vector<std::pair<double, const std::string*>> mean;
  for (const auto& [comm, series] : s.top_cpu_cores) {
    PointRange r = points_in(series, from, to);
    double sum = 0;
    for (std::size_t i = r.begin; i < r.end; ++i) {
      if (!std::isnan(series.v[i])) sum += series.v[i];
    }
    if (sum > 0) mean.emplace_back(sum / static_cast<double>(samples), &comm);
  }
  std::sort(mean.begin(), mean.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  if (mean.size() > kTopCpuNamesKept) mean.resize(kTopCpuNamesKept);
  for (const auto& [cores, comm] : mean) out[*comm] = cores;
  return out;
}

/// Seconds of [start, end] inside loadwatch's gaps. The counter rises at the first sample after
/// a gap by the gap's length, so each rise covers the span back to the sample before it: the
/// part of that span inside the window counts (a gap can begin before a phase that began
/// while loadwatch was stopped). Unknown when the series does not reach the window.
std::optional<double> gap_seconds_in(const Series& gaps, double start, double end) {
  if (gaps.empty() || gaps.t.front() > end || gaps.t.back() < start) return std::nullopt;
  double seconds = 0;
  for (std::size_t i = 1; i < gaps.t.size(); ++i) {
    double rise = gaps.v[i] - gaps.v[i - 1];
    double from = std::max(gaps.t[i - 1], start), to = std::min(gaps.t[i], end);
    if (rise > 0 && to > from) seconds += std::min(rise, to - from);
  }
  return seconds;
}

HostPhaseStats summarize_host(const HostSeries& s, double start, double stable, double end) {
  HostPhaseStats h;
  h.cores = s.cores;
  for (const auto& [mode, counter] : s.cpu_seconds_by_mode) {
    std::optional<double> cores = rate_in(counter, stable, end);
    if (!cores) continue;
    if (busy_mode(mode)) h.cpu_busy_cores = h.cpu_busy_cores.value_or(0) + *cores;
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
  h.run_queue_mean = mean_in(s.procs_running, stable, end);
  h.cpu_pressure_ratio = stall_share(s.cpu_pressure_waiting, stable, end);
  h.memory_pressure_ratio = stall_share(s.memory_pressure_waiting, stable, end);
  h.memory_stall_ratio = stall_share(s.memory_pressure_stalled, stable, end);
  h.io_pressure_ratio = stall_share(s.io_pressure_waiting, stable, end);
  h.io_stall_ratio = stall_share(s.io_pressure_stalled, stable, end);
  h.swap_in_pages_per_second = rate_in(s.swap_in_pages, stable, end);
  h.swap_out_pages_per_second = rate_in(s.swap_out_pages, stable, end);
  h.top_cpu_cores = top_cpu(s, stable, end);
  h.sample_gap_seconds = gap_seconds_in(s.sample_gap_seconds, start, end);
  return h;
}

std::optional<double> ratio_of(std::optional<double> part, std::optional<double> whole) {
  if (!part || !whole || *whole <= 0) return std::nullopt;
  return std::clamp(*part / *whole, 0.0, 1.0);
}

/// The host's busy CPU that no target's processes used: everyone else, and kernel work
/// (interrupts, softirq) no process is charged for. Unknown when a target's CPU is.
std::optional<double> others_cpu(const HostPhaseStats& h,
                                 const std::vector<TargetPhaseStats>& targets) {
  if (!h.cpu_busy_cores) return std::nullopt;
  double used = 0;
  for (const TargetPhaseStats& t : targets) {
    if (!t.cpu_cores) return std::nullopt;
    used += *t.cpu_cores;
  }
  return std::max(0.0, *h.cpu_busy_cores - used);
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
  p.host.others_cpu_cores = others_cpu(p.host, p.targets);
  if (series.generator_target && p.target(*series.generator_target)) {
    p.generator_target = series.generator_target;
  }
  p.mock.p95_seconds = median_in(series.mock.p95_seconds, stable, end);
  p.mock.error_ratio = ratio_of(increase_in(series.mock.errors, stable, end),
                                increase_in(series.mock.requests, stable, end));
  return p;
}

CapacityReport report_from_series(std::optional<RunInfo> run,
                                  const std::vector<PhaseWindow>& phases, const RunSeries& series,
                                  const WarmupRule& warmup, const AnalysisOptions& options) {
  CapacityReport report;
  report.run = std::move(run);
  report.phases.reserve(phases.size());
  for (const PhaseWindow& w : phases) report.phases.push_back(summarize_phase(w, series, warmup));
  analyse(report, options);
  return report;
}

}  // namespace loadwatch::analysis
