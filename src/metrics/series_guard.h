#pragma once
// The last check between what producers hand over and /metrics: whatever a push, a source
// or a textfile sent, the families that leave here serialize into a valid exposition.

#include <prometheus/metric_family.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "metrics/series_limits.h"

namespace loadwatch {

/// Where each metric of a family came from: an origin index the caller names (the sampler
/// uses its collector's position) with kForeignOrigin set for re-exported text (textfiles,
/// Prometheus sources), which never displaces loadwatch's own series. Parallel to
/// MetricFamily::metric.
inline constexpr std::uint16_t kForeignOrigin = 0x8000;
using SeriesOrigins = std::vector<std::vector<std::uint16_t>>;

/// Counts Prometheus series: a histogram metric is its buckets (+Inf included) + _sum +
/// _count, a summary its quantiles + _sum + _count, anything else 1.
std::size_t series_count(const prometheus::ClientMetric& metric, prometheus::MetricType type);

/// Keeps at most `max_series` series, in order; returns how many were dropped.
std::size_t cap_series(std::vector<prometheus::MetricFamily>& families, std::size_t max_series);

struct GuardOptions {
  /// Series kept in all; the rest, in order, is dropped as total_series.
  std::size_t max_series = kMaxPageSeries;
  /// Replace invalid UTF-8 in HELP and label values with U+FFFD (and count it).
  bool fix_utf8 = true;
  /// Bytes of the page (estimated, page_budget.h) that the series of `budgeted` origins share
  /// fairly; 0: no byte budget.
  std::size_t budget_bytes = 0;
  /// Origins (without kForeignOrigin) under the byte budget: the push sources.
  std::vector<std::uint16_t> budgeted;
};

/// What a guard pass changed, by origin (without kForeignOrigin).
struct GuardReport {
  /// Series dropped, by (origin, reason).
  std::map<std::pair<std::uint16_t, std::string>, double> dropped;
  /// HELP texts and label values whose invalid UTF-8 was replaced, by origin.
  std::map<std::uint16_t, double> invalid_utf8;
  /// A family name for each (origin, reason) that dropped something, for the log.
  std::map<std::pair<std::uint16_t, std::string>, std::string> example;

  double dropped_total() const;
};

/// Makes `families` valid for serialize_text, in place:
/// - a family with an invalid metric name is dropped (invalid_name); a repeated family name
///   is merged into the first when the type agrees, else dropped (type_conflict);
/// - foreign metrics in a family that also has loadwatch's own are dropped (reserved); a
///   family named like another's _count/_sum/_bucket series is dropped (name_collision; its
///   foreign metrics as reserved when the other is loadwatch's own);
/// - a series with an invalid, reserved (`__`), repeated or too long label name, too many
///   labels, a too long value, or a label the type writes itself (quantile, le) is dropped
///   (invalid_label, label_limit); NaN or repeated quantiles and buckets too, and those past
///   the caps (max_quantiles, max_buckets); buckets are sorted by bound;
/// - invalid UTF-8 in HELP and label values is replaced (options.fix_utf8), HELP is cut to
///   kMaxHelpBytes;
/// - a series seen twice in a family keeps its first copy (duplicate);
/// - past options.max_series, the rest is dropped (total_series);
/// - past options.budget_bytes, the budgeted origins' families are cut to each origin's fair
///   share: within an origin the smallest families are kept, the others dropped (page_bytes).
/// `origins` may be null (every metric then has origin 0 and is foreign). Families left
/// empty are removed. Adds what it did to `report`.
void guard_families(std::vector<prometheus::MetricFamily>& families, SeriesOrigins* origins,
                    const GuardOptions& options, GuardReport& report);

}  // namespace loadwatch
