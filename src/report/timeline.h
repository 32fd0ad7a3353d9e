#pragma once
// The run's per-second series as the HTML report charts them: [[t...],[v...]] per series,
// small enough to keep beside the saved report.

#include <nlohmann/json.hpp>

#include "analysis/phase_summary.h"

namespace loadwatch::report {

/// {"series":[{"name","unit","t":[..],"v":[..]}...]}: RPS, p50/p95/p99, each target's CPU cores,
/// host CPU busy cores.
nlohmann::ordered_json timeline_json(const analysis::RunSeries& series);

}  // namespace loadwatch::report
