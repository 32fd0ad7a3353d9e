#pragma once
// One run across several hosts, each watched by its own loadwatch: a section per host (its role
// inferred from what it watches), the fleet's figures per phase, and a verdict that judges every
// host at the fleet's knee. Pure: the per-host reports come in, already built by each loadwatch
// over its own phase windows (its own clock). docs/report.md "Several hosts" describes it.

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/capacity_report.h"
#include "analysis/document.h"
#include "analysis/histogram_quantile.h"

namespace loadwatch::analysis {

/// A host clock further than this from the reader's is a warning: phase windows of hosts would
/// then be misplaced by more than half of a default sample interval (1 s).
inline constexpr double kClockSkewWarnSeconds = 0.5;

/// A target whose CPU is at least this many times that of the same target on another host of
/// the same role: the load is spread unevenly (a load balancer, a shard key).
inline constexpr double kUnevenTargetCpu = 2.0;
/// ... when the busier one uses at least this many cores (below, the difference is noise).
inline constexpr double kUnevenTargetMinCores = 0.2;

enum class HostRole { generator, target, mock, unknown };
/// "generator host", "target host", "mock host", "host".
const char* host_role_name(HostRole role);
/// A generator source or listener (throughput, or a watched generator) makes a generator host;
/// else a mock source a mock host; else watched targets a target host.
HostRole infer_role(const CapacityReport& report);

struct FleetHost {
  std::string name;  // as the reader named it (NAME=URL, else host:port)
  std::string url;
  CapacityReport report;
  /// Its clock minus the reader's, and the bound of that figure (half the round trip).
  std::optional<double> skew_seconds, skew_uncertainty;
  std::string skew_unavailable;  // why there is no skew
  /// Its request-duration histogram per phase (by phase index; empty: none), which the
  /// fleet's latency sums by bucket over the generator hosts; over what stretch each was
  /// taken, or why there is none.
  std::vector<std::vector<HistogramBucket>> phase_histograms;
  std::string histogram_window;
  std::string histogram_unavailable;
  /// Per phase (as phase_histograms): why that phase has no histogram, when the host has them
  /// for others; and, where the generator timed its figures, the moments on the host's clock
  /// between which its buckets counted the requests.
  std::vector<std::string> phase_histogram_unavailable;
  std::vector<std::optional<std::pair<double, double>>> histogram_spans;
};

struct HostVerdict {
  std::string host;
  HostRole role = HostRole::unknown;
  std::optional<std::size_t> phase;  // the host's phase judged
  Bottleneck result;
};

struct FleetReport {
  std::optional<RunInfo> run;
  std::vector<FleetHost> hosts;
  std::vector<HostRole> roles;  // per host
  /// Per host, per fleet phase: the index of the host's own phase it is (matched by name and
  /// start, so a phase one host lacks does not shift the ones after it).
  std::vector<std::vector<std::size_t>> host_phase;
  /// The fleet per phase: throughput summed over the generator hosts, latency where it can be
  /// had without averaging quantiles, errors weighted by throughput, every host's targets as
  /// HOST/TARGET. analyse() on these gives the knee.
  CapacityReport fleet;
  std::vector<HostVerdict> verdicts;  // one per host, in host order
  std::string summary;                // the verdict in one sentence
  std::vector<std::string> warnings;  // clock skew, phases that disagree
};

/// Host `host`'s own phase that is `ref`, a phase of host `first`: the same name, at or after
/// index `after` (phases keep their order), starting within half the phase (at least the skew
/// bound) of it on the reader's clock, the nearest where the name repeats; the first of the
/// name when either has no start. nullopt when `host` lacks it: a phase must not be judged or
/// filled with another phase's figures.
std::optional<std::size_t> match_phase(const FleetHost& first, const PhaseStats& ref,
                                       const FleetHost& host, std::size_t after = 0);

/// Builds the fleet report. `hosts` must hold at least one host. The fleet's phases are the
/// first host's that every host has: matched by name, the nearest start (on the reader's clock)
/// where a name repeats; one a host lacks is left out with a warning.
FleetReport build_fleet_report(std::vector<FleetHost> hosts);

Document fleet_document(const FleetReport& report);
void to_json(nlohmann::ordered_json& j, const FleetReport& r);

}  // namespace loadwatch::analysis
