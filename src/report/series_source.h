#pragma once
// Where a run report's series come from: the daemon's own history, or a Prometheus server
// (query_range). Each source only answers "this family, these labels, this time range"; the
// mapping from metric families to a RunSeries is shared (load_run_series), so both give the
// same report from the same data.

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/phase_summary.h"
#include "analysis/series.h"

namespace loadwatch::report {

/// One series of a family with its labels. Counters hold their raw (cumulative) value.
struct LabeledSeries {
  std::map<std::string, std::string> labels;
  analysis::Series series;
};

/// A source that cannot answer (unreachable, bad answer); the message says why.
struct SeriesSourceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class SeriesSource {
 public:
  virtual ~SeriesSource() = default;
  /// Every series of `family` whose labels include `match`, with its points in [from, to].
  /// Throws SeriesSourceError.
  virtual std::vector<LabeledSeries> fetch(const std::string& family,
                                           const std::map<std::string, std::string>& match,
                                           double from, double to) = 0;
  /// The last point of every series of `family` whose labels include `match` seen in
  /// [from, to], however briefly the series lived: fetch() over a long range reads at a step
  /// that can pass over a run's phase of a few seconds. The point's time is that of the last
  /// value where the source knows it, else `to`. The default takes fetch()'s last points.
  virtual std::vector<LabeledSeries> fetch_last(const std::string& family,
                                                const std::map<std::string, std::string>& match,
                                                double from, double to);
  /// The monitored host's CPU count when the series do not tell it (they may not: the
  /// history sums CPUs away).
  virtual std::optional<int> host_cores() { return std::nullopt; }
};

struct RunSeriesOptions {
  /// The target that is the load generator itself, when it is watched (default: a target
  /// named "generator", if there is one).
  std::optional<std::string> generator_target;
};

/// Fills a RunSeries for [from, to] from `source`. Throws SeriesSourceError.
analysis::RunSeries load_run_series(SeriesSource& source, double from, double to,
                                    const RunSeriesOptions& options = {});

/// Points of several series added where their times are equal (their sum); a time missing from
/// any of them is left out, so a partial sum never looks like a drop.
analysis::Series sum_aligned(const std::vector<const analysis::Series*>& parts);

}  // namespace loadwatch::report
