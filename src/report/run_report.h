#pragma once
// A recorded run's capacity report: its phases as windows over the series a source holds.

#include "analysis/capacity_report.h"
#include "report/series_source.h"
#include "runs/run.h"

namespace loadwatch::report {

/// The run as the report names it.
analysis::RunInfo run_info(const Run& run);
/// The run's phases as time windows; an open run's last phase ends at `now`.
std::vector<analysis::PhaseWindow> phase_windows(const Run& run, double now);

/// Seconds past a run's end whose samples the report reads too: a sample shows a generator's
/// figures up to one sample interval (1 s by default) after the moment they describe, so the
/// last count before the end is often in a sample after it. Two default intervals.
inline constexpr double kLateSampleSeconds = 2.0;

/// Where a report of `run` reads its samples up to: kLateSampleSeconds past its end, as far as
/// `now`; an open run's is `now`.
double report_end(const Run& run, double now);

/// The report of `run` from `source`, with the samples up to kLateSampleSeconds after its end
/// (those that exist by `now`). Throws SeriesSourceError.
analysis::CapacityReport report_for_run(const Run& run, SeriesSource& source, double now,
                                        const RunSeriesOptions& options = {},
                                        analysis::RunSeries* series_out = nullptr);

}  // namespace loadwatch::report
