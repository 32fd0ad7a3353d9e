#pragma once
// The load generator's figures of one phase: req/s from the moments its counters changed (with
// the bound those moments allow), the error ratio between the same two moments, and p50/p95/p99
// from its histogram between them, or else its own rolling quantiles, labelled as such.

#include "analysis/phase_stats.h"
#include "analysis/phase_summary.h"

namespace loadwatch::analysis {

/// Fills rps (and its bound, window, method or reason), error_ratio and the latency quantiles of
/// `p` from the stable window [from, to].
void summarize_generator(PhaseStats& p, const GeneratorSeries& g, double from, double to);

}  // namespace loadwatch::analysis
