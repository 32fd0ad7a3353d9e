#pragma once
// wrk's run summaries (scripts/wrk/loadwatch.lua writes them as textfiles) as finished runs.

#include <prometheus/metric_family.h>

#include <vector>

#include "runs/run_observer.h"

namespace loadwatch {

/// Reports every run="..." found in loadwatch_wrk_* families as a finished run (origin
/// "wrk:RUN"): it ended at loadwatch_wrk_last_run_timestamp_seconds (else at `file_mtime`)
/// and lasted loadwatch_wrk_duration_seconds (else nothing is known of its start: start = end).
void report_wrk_summaries(const std::vector<prometheus::MetricFamily>& families, double file_mtime,
                          RunObserver& runs);

}  // namespace loadwatch
