#pragma once
// From per-sample series to PhaseStats: the one reduction both the daemon's history and a
// Prometheus server feed (each fills a RunSeries for the run's time range).
//
// Which window each figure uses (docs/capacity.md explains why):
// - rates, means and latency quantiles: the stable window (the phase minus its warm-up);
// - peaks (fds, TIME_WAIT, ephemeral ports), listen overflows and RSS start/end/slope: the whole
//   phase, since a leak or an exhausted resource during warm-up counts as much as later.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/capacity_report.h"
#include "analysis/phase_stats.h"
#include "analysis/series.h"

namespace loadwatch::analysis {

struct TargetSeries {
  std::string name;
  Series cpu_seconds;            // counter: user + system CPU seconds of the group
  Series busiest_process_cores;  // gauge: CPU of the busiest member over each sample interval
  Series rss_bytes;
  Series open_fds;
  Series max_fds;                         // soft RLIMIT_NOFILE of the member closest to it
  std::optional<double> cpu_limit_cores;  // cgroup cpu.max quota or affinity, when smaller
  Series nice;                            // gauge: the highest nice value of its members
  Series cpu_periods;                     // counter: quota periods of the binding cgroup (cpu.stat)
  Series cpu_throttled_periods;           // counter: those in which the quota ran out
  Series cpu_throttled_seconds;           // counter: time held back, summed over CPUs
};

struct HostSeries {
  std::optional<int> cores;
  std::map<std::string, Series> cpu_seconds_by_mode;  // counters summed over CPUs (/proc/stat)
  Series time_wait;
  std::optional<double> time_wait_limit;  // net.ipv4.tcp_max_tw_buckets
  Series listen_overflows;                // counter
  Series ephemeral_port_ratio;
  Series procs_running;  // gauge: the run queue (running + runnable threads)
  // Pressure stall information, counters in seconds ("waiting": some, "stalled": full).
  Series cpu_pressure_waiting;
  Series memory_pressure_waiting, memory_pressure_stalled;
  Series io_pressure_waiting, io_pressure_stalled;
  Series swap_in_pages, swap_out_pages;         // counters
  std::map<std::string, Series> top_cpu_cores;  // comm -> cores, while among the busiest names
  Series sample_gap_seconds;  // counter: loadwatch's spans without a sample (it was stopped)
};

/// One generator source's own counters, with the ages that say which moment they describe.
struct GeneratorSourceSeries {
  std::string name;
  Series requests;                      // counter
  Series failures;                      // counter
  Series data_age_seconds;              // absent on older data: then the sample spacing bounds
  Series data_age_uncertainty_seconds;  // how much older the figures may be than the age says
  std::map<double, Series> duration_buckets;  // le -> cumulative count (the listener's histogram)
  /// Users as the same answers reported them: a count shown beside another user count than
  /// the phase's is not the phase's (a phase's end is seen up to one update late).
  Series users;
};

struct GeneratorSeries {
  Series requests;  // counter
  Series failures;  // counter
  Series rps;       // gauge as the generator reports it; used when there is no request counter
  Series p50_seconds, p95_seconds, p99_seconds;  // as the generator reports them
  /// What the quantiles above are, in words, e.g. "the generator's rolling quantile (Locust:
  /// its last 10 s)".
  std::string latency_window;
  /// Per source: rates come from each one's change points, then add up.
  std::vector<GeneratorSourceSeries> sources;
  /// Steps of the wall clock of the loadwatch that sampled these (a counter): a rate whose
  /// window spans one is off by the step, so it is not given.
  Series clock_steps;
};

struct MockSeries {
  Series requests;  // counter
  Series errors;    // counter (e.g. unmatched requests)
  Series p95_seconds;
};

/// Everything a report reads for one run.
struct RunSeries {
  std::vector<TargetSeries> targets;
  HostSeries host;
  GeneratorSeries generator;
  MockSeries mock;
  std::optional<std::string> generator_target;  // a target that is the generator itself
};

struct PhaseWindow {
  std::string name;
  std::optional<std::int64_t> users;
  double start = 0;  // unix seconds
  double end = 0;
};

/// The warm-up dropped from each phase: `fraction` of it, at least `min_seconds`, and never more
/// than `max_fraction` of it.
struct WarmupRule {
  double fraction = 0.20;
  double min_seconds = 30;
  double max_fraction = 0.5;

  double warmup_seconds(double phase_seconds) const;
  std::string describe() const;
};

PhaseStats summarize_phase(const PhaseWindow& window, const RunSeries& series,
                           const WarmupRule& warmup = {});

/// A run's whole report: every phase summarised, then analysed. What the daemon's report
/// endpoint and `report --prometheus` both call once they have filled `series`.
CapacityReport report_from_series(std::optional<RunInfo> run,
                                  const std::vector<PhaseWindow>& phases, const RunSeries& series,
                                  const WarmupRule& warmup = {},
                                  const AnalysisOptions& options = {});

}  // namespace loadwatch::analysis
