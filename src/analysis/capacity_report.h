#pragma once
// The capacity report: the per-phase table and what the analysis finds across phases (the
// throughput knee, the latency knee, the USL fit and the bottleneck at the knee). analyse()
// fills the findings from the phases alone, so a report is the same whether its phases came
// from the daemon's history, a Prometheus server or a CSV file. docs/report.md is its JSON.

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/bottleneck.h"
#include "analysis/kneedle.h"
#include "analysis/phase_stats.h"
#include "analysis/usl_fit.h"

namespace loadwatch::analysis {

inline constexpr int kReportVersion = 1;

/// Throughput that never rises more than this above the first step's (its upper bound, when it
/// has one) is flat: saturated from the first step, not a knee.
inline constexpr double kFlatThroughputRise = 0.10;

/// The run the phases belong to (absent for a CSV).
struct RunInfo {
  std::string id;
  std::string name;
  std::map<std::string, std::string> labels;
  std::optional<double> start, end;     // unix seconds
  std::string status;                   // e.g. finished, interrupted
  std::vector<std::string> hosts = {};  // a run across loadwatches: the hosts that took part

  bool operator==(const RunInfo&) const = default;
};

/// Where a finding sits: an index into CapacityReport::phases.
struct PhaseRef {
  std::size_t index = 0;
  std::string name;
  std::optional<std::int64_t> users;

  bool operator==(const PhaseRef&) const = default;
};

struct ThroughputKnee {
  KneedleOptions options;
  std::optional<PhaseRef> phase;  // absent: no knee
  std::optional<double> rps;
  std::string reason;  // why there is none
  /// "flat": saturated from the first step; "generator_capped": flat because the generator was
  /// saturated; empty otherwise.
  std::string shape;

  bool operator==(const ThroughputKnee& o) const {
    return options.sensitivity == o.options.sensitivity && options.online == o.options.online &&
           phase == o.phase && rps == o.rps && reason == o.reason && shape == o.shape;
  }
};

struct LatencyKneeFinding {
  std::optional<PhaseRef> phase;
  std::optional<double> p95_seconds;
  std::optional<double> expected_p95_seconds;
  std::string reason;

  bool operator==(const LatencyKneeFinding&) const = default;
};

struct BottleneckFinding {
  std::optional<PhaseRef> phase;  // the phase assessed
  std::string basis;              // "throughput knee", "latency knee" or "highest load"
  Bottleneck result;

  bool operator==(const BottleneckFinding&) const = default;
};

struct CapacityReport {
  std::optional<RunInfo> run;
  std::string input;  // where the phases came from, e.g. "csv:steps.csv"
  std::vector<PhaseStats> phases;
  /// Phases with users but no throughput, left out of the knee and the USL fit, with why.
  std::vector<std::string> left_out_of_scaling;

  ThroughputKnee knee;
  LatencyKneeFinding latency_knee;
  UslFit usl;
  BottleneckFinding bottleneck;
};

struct AnalysisOptions {
  KneedleOptions kneedle;
};

/// The phases that enter the knee and the USL fit: those with a user count > 0 and a throughput,
/// the first phase of each user count (a ramp-down repeats counts), by increasing users.
std::vector<std::size_t> scaling_points(const std::vector<PhaseStats>& phases);

/// Fills knee, latency_knee, usl and bottleneck from report.phases.
void analyse(CapacityReport& report, const AnalysisOptions& options = {});

void to_json(nlohmann::ordered_json& j, const CapacityReport& r);
/// Reads a report written by to_json. Throws std::invalid_argument naming the field.
void from_json(const nlohmann::json& j, CapacityReport& r);

}  // namespace loadwatch::analysis
