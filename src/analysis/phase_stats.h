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
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

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

  bool operator==(const TargetPhaseStats&) const = default;
};

/// The host during the phase.
struct HostPhaseStats {
  std::optional<int> cores;                      // online CPUs
  std::map<std::string, double> cpu_cores_by_mode;  // /proc/stat modes except softirq, in cores
  std::optional<double> softirq_cores;           // softirq apart: packet processing shows here
  std::optional<double> time_wait_max;           // TCP sockets in TIME_WAIT, peak
  std::optional<double> time_wait_limit;         // net.ipv4.tcp_max_tw_buckets
  std::optional<double> listen_overflows;        // accept-queue overflows during the phase
  std::optional<double> ephemeral_port_ratio_max;  // peak share of the local port range in use

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

  std::optional<double> rps;  // mean over the stable window
  std::optional<double> rps_low, rps_high;  // the bound of rps, when known
  /// The window the rate spans: the moments of its first and last counter change (unix s).
  std::optional<double> rps_window_start, rps_window_end;
  std::string rps_method;       // how rps was measured, in words
  std::string rps_unavailable;  // why rps is absent, e.g. "1 counter update in 7 s: ..."
  std::optional<double> p50_seconds;  // generator latency quantiles, as latency_method says
  std::optional<double> p95_seconds;
  std::optional<double> p99_seconds;
  /// The bound of each quantile (the histogram bucket it lies in), when known.
  std::optional<double> p50_low_seconds, p50_high_seconds;
  std::optional<double> p95_low_seconds, p95_high_seconds;
  std::optional<double> p99_low_seconds, p99_high_seconds;
  std::string latency_method;  // "histogram", "generator" or empty (no quantiles)
  std::string latency_window;  // which figure and over what window, in words
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
