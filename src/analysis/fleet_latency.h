#pragma once
// The latency of several generator hosts together: their request-duration histograms over one
// phase summed bucket by bucket (by le), and the quantiles read from the sum. Quantiles of
// hosts are never averaged: the mean of two p95s is the p95 of neither.

#include <string>
#include <vector>

#include "analysis/histogram_quantile.h"
#include "analysis/phase_stats.h"

namespace loadwatch::analysis {

/// Each host's histogram of one phase (cumulative counts by le, increasing le); every one must
/// be there, with the same edges, for a merge. Fills `out`'s p50/p95/p99, their bounds (the
/// bucket each lies in), latency_method "histogram" and latency_window (`window` says over
/// what stretch each host's buckets were taken). Returns false, leaving `out` alone, when a
/// histogram is missing, the edges differ, or no request was counted.
bool merge_host_histograms(PhaseStats& out,
                           const std::vector<const std::vector<HistogramBucket>*>& histograms,
                           const std::string& window);

}  // namespace loadwatch::analysis
