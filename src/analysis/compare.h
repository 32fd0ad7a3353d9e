#pragma once
// The baseline gate: phases of a current run against the same phases of a baseline, under rules
// such as "p95 at most 20 % above the baseline". docs/capacity.md describes the rule syntax.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/capacity_report.h"

namespace loadwatch::analysis {

enum class Metric { rps, p50, p95, p99, error_ratio };
enum class Bound { max, min };  // --max: current <= limit; --min: current >= limit
enum class Change { relative, points, absolute };  // "20%", "0.5pp", "30ms" / "12"

struct Rule {
  Metric metric = Metric::p95;
  Bound bound = Bound::max;
  Change change = Change::relative;
  double amount = 20;   // signed: percent, percentage points, or base units (seconds, req/s)
  std::string text;     // as written, e.g. "p95=+20%"
  std::string warning;  // a likely mistake in how it was written (e.g. "rps=-10" without a unit)

  /// "p95 <= base +20%"
  std::string describe() const;
  /// The limit the current value is held to.
  double limit(double base) const;
};

/// "p95=+20%" for --max or --min. A value without a sign points the usual way (up for --max,
/// down for --min). "rps=-10/s" is absolute; "rps=-10" is read the same but warns, as it is
/// easily meant as -10 %. Throws std::invalid_argument with the reason.
Rule parse_rule(Bound bound, std::string_view spec);

/// p95 at most 20 % above the baseline.
std::vector<Rule> default_rules();

/// The rules of --max/--min (or the `max`/`min` query parameters) in that order, or the default
/// rules when there are none: the one reading of a gate for compare, report --baseline and the
/// report page. Throws std::invalid_argument naming the bad rule.
std::vector<Rule> rules_or_default(const std::vector<std::string>& max_specs,
                                   const std::vector<std::string>& min_specs);

const char* metric_name(Metric m);
std::optional<double> metric_value(const PhaseStats& p, Metric m);
/// The figure's bound [low, high] when the report gives one.
std::optional<std::pair<double, double>> metric_bound(const PhaseStats& p, Metric m);
std::string format_metric(Metric m, double v);

/// within_noise: the figures cross the limit, but by less than their combined uncertainty.
/// inconclusive: the combined uncertainty is larger than the rule's margin, so the figures
/// cannot tell whether the limit holds. Neither is a regression.
enum class Verdict { ok, regression, no_data, within_noise, inconclusive };
const char* verdict_name(Verdict v);

struct RuleResult {
  Rule rule;
  std::optional<double> base, current, limit;
  std::optional<double> uncertainty;  // combined half-width of the two figures, against the limit
  Verdict verdict = Verdict::no_data;
  std::string message;  // the figures, in words
};

struct PhaseComparison {
  std::string base_phase;
  std::optional<std::string> current_phase;  // absent: the current run has no such phase
  std::optional<std::int64_t> users;
  std::string matched_by;  // "users" or "name"
  std::vector<RuleResult> results;
};

struct Comparison {
  std::vector<PhaseComparison> phases;
  std::vector<std::string> unmatched_current;  // phases only the current run has (not judged)
  // Phases at 0 users in either run (a generator's drain or an idle step): they carry only the
  // requests cut off as users stopped, so they are listed and never judged.
  std::vector<std::string> idle_phases;
  std::vector<std::string> problems;  // why the input is bad, if it is

  bool regressed() const;
  bool bad_input() const;
  bool inconclusive() const;
  /// 0 within the limits (within noise and inconclusive included), 1 on a regression, 2 when
  /// the comparison could not be made in full (a baseline phase or a figure is missing): the
  /// gate never passes on what it did not check. With `fail_inconclusive`, 3 when a rule was
  /// inconclusive and nothing worse happened.
  int exit_code(bool fail_inconclusive = false) const;
};

/// Phases are matched by user count, else by name; each current phase is used once. Phases at
/// 0 users are left out of the matching and the verdict (idle_phases).
Comparison compare_reports(const CapacityReport& base, const CapacityReport& current,
                           const std::vector<Rule>& rules);

}  // namespace loadwatch::analysis
