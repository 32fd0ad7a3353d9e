#pragma once
// One phase (step) of a run, reduced to the figures the capacity report works on. This is the
// input of the analysis: the daemon's history, a Prometheus server or a CSV file fill it, and the
// knee, the USL fit, the bottleneck and the baseline gate read only this.
//
// Written as ordered JSON (fields in a reading order), read from any JSON.
// Units are base units (seconds, bytes, cores, ratios 0..1). A figure loadwatch did not see is
// std::nullopt and is left out of the JSON, never written as 0. docs/report.md describes the JSON.

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace loadwatch::analysis {

/// One target (a group of processes) during the phase.
struct TargetPhaseStats {
  std::string name;
  std::optional<double> cpu_cores;                   // user+system, mean over the stable window
  std::optional<double> busiest_process_core_share;  // the busiest member's CPU, 1.0 = one core
  std::optional<double> cpu_limit_cores;             // cgroup quota or CPU affinity, when known
  std::optional<double> rss_start_bytes;             // first sample of the phase
  std::optional<double> rss_end_bytes;               // last sample of the phase
  std::optional<double> rss_slope_bytes_per_second;  // least-squares slope over the phase
  std::optional<double> open_fds_max;                // highest open-fd count in the phase
  std::optional<double> fd_limit;                    // lowest soft RLIMIT_NOFILE seen in the phase
  std::optional<double> throttled_period_ratio;      // quota periods that ran out / periods, 0..1
  std::optional<double> throttled_seconds_per_second;  // time held back by the quota, per second
  std::optional<double> nice;                          // its members' highest nice value, -20..19

  bool operator==(const TargetPhaseStats&) const = default;
};

/// The host during the phase.
struct HostPhaseStats {
  std::optional<int> cores;                         // online CPUs
  std::map<std::string, double> cpu_cores_by_mode;  // /proc/stat modes except softirq, in cores
  std::optional<double> softirq_cores;              // softirq apart: packet processing shows here
  std::optional<double> time_wait_max;              // TCP sockets in TIME_WAIT, peak
  std::optional<double> time_wait_limit;            // net.ipv4.tcp_max_tw_buckets
  std::optional<double> listen_overflows;           // accept-queue overflows during the phase
  std::optional<double> ephemeral_port_ratio_max;   // peak share of the local port range in use
  // Who used the CPU: the modes spent running something (user, nice, system, irq, softirq),
  // and the part of it the targets' processes did not use (everyone else, kernel work too).
  std::optional<double> cpu_busy_cores;
  std::optional<double> others_cpu_cores;
  std::optional<double> run_queue_mean;  // procs_running: threads running or waiting for a CPU
  // Pressure stall information: the share of the window stalled ("some": at least one task,
  // "full": all non-idle tasks at once), 0..1.
  std::optional<double> cpu_pressure_ratio;
  std::optional<double> memory_pressure_ratio;
  std::optional<double> memory_stall_ratio;
  std::optional<double> io_pressure_ratio;
  std::optional<double> io_stall_ratio;
  std::optional<double> swap_in_pages_per_second;
  std::optional<double> swap_out_pages_per_second;
  // The busiest process names on the host (everyone's, targets' too), comm -> mean cores over
  // the stable window: who "others" are.
  std::map<std::string, double> top_cpu_cores;
  // Seconds of the phase in which loadwatch took no sample (it, or its host or VM, was
  // stopped): its figures have a hole there, and on the system under test so did the service.
  std::optional<double> sample_gap_seconds;

  bool operator==(const HostPhaseStats&) const = default;
};

/// The mock server (a downstream stand-in such as Mountebank), when a source reports it.
struct MockPhaseStats {
  std::optional<double> p95_seconds;
  std::optional<double> error_ratio;

  bool operator==(const MockPhaseStats&) const = default;
};

struct PhaseStats {
  std::string name;
  std::optional<std::int64_t> users;  // concurrency of the step
  std::optional<double> start;        // unix seconds
  std::optional<double> end;
  std::optional<double> duration_seconds;
  std::optional<double> stable_start;  // the warm-up before it is dropped
  std::optional<double> stable_seconds;
  std::string warmup_rule;  // how stable_start was chosen, in words

  std::optional<double> rps;                // mean over the stable window
  std::optional<double> rps_low, rps_high;  // the bound of rps, when known
  /// The window the rate spans: the moments of its first and last counter change (unix s).
  std::optional<double> rps_window_start, rps_window_end;
  std::string rps_method;             // how rps was measured, in words
  std::string rps_unavailable;        // why rps is absent, e.g. "1 counter update in 7 s: ..."
  std::optional<double> p50_seconds;  // generator latency quantiles, as latency_method says
  std::optional<double> p95_seconds;
  std::optional<double> p99_seconds;
  /// The bound of each quantile (the histogram bucket it lies in), when known.
  std::optional<double> p50_low_seconds, p50_high_seconds;
  std::optional<double> p95_low_seconds, p95_high_seconds;
  std::optional<double> p99_low_seconds, p99_high_seconds;
  std::string latency_method;         // "histogram", "generator" or empty (no quantiles)
  std::string latency_window;         // which figure and over what window, in words
  std::string latency_unavailable;    // why there are no quantiles, when a generator reported
  std::optional<double> error_ratio;  // failures / requests in the stable window

  std::vector<TargetPhaseStats> targets;
  HostPhaseStats host;
  /// The target that is the load generator itself (its CPU is then the generator's CPU).
  std::optional<std::string> generator_target;
  MockPhaseStats mock;

  bool operator==(const PhaseStats&) const = default;

  const TargetPhaseStats* target(const std::string& target_name) const;
};

void to_json(nlohmann::ordered_json& j, const TargetPhaseStats& t);
void from_json(const nlohmann::json& j, TargetPhaseStats& t);
void to_json(nlohmann::ordered_json& j, const HostPhaseStats& h);
void from_json(const nlohmann::json& j, HostPhaseStats& h);
void to_json(nlohmann::ordered_json& j, const MockPhaseStats& m);
void from_json(const nlohmann::json& j, MockPhaseStats& m);
void to_json(nlohmann::ordered_json& j, const PhaseStats& p);
/// Throws nlohmann::json::exception (type errors) or std::invalid_argument naming the field.
void from_json(const nlohmann::json& j, PhaseStats& p);

}  // namespace loadwatch::analysis
