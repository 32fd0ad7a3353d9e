#pragma once
// The latency knee: the first phase whose p95 rises clearly above the curve the earlier phases
// set. "The curve" is a Theil–Sen line (median of the pairwise slopes, median intercept) through
// the earlier phases' (users, p95), extended to the phase's user count. The median keeps one
// phase that already rose a little from bending the line towards it, as a least-squares line
// would. It takes two earlier phases, so the third is the first that can be a knee; a falling
// line (warm-up noise: latency does not drop with load) is replaced by the earlier median.
// "Clearly above" is more than kLatencyKneeRise above the curve and at least
// kLatencyKneeFloorSeconds.

#include <cstddef>
#include <optional>
#include <vector>

namespace loadwatch::analysis {

inline constexpr double kLatencyKneeRise = 0.20;           // 20 % above the extrapolation
inline constexpr double kLatencyKneeFloorSeconds = 0.001;  // ignore sub-millisecond wobble
inline constexpr std::size_t kLatencyKneeMinEarlier = 2;   // phases that set the curve
inline constexpr std::size_t kLatencyKneeMaxEarlier = 32;  // the nearest ones, beyond that

struct LatencyKnee {
  std::size_t index = 0;  // into the input points
  double p95_seconds = 0;
  double expected_seconds = 0;  // the earlier phases' curve at this user count
};

/// users strictly increasing, p95 the same length.
std::optional<LatencyKnee> latency_knee(const std::vector<double>& users,
                                        const std::vector<double>& p95_seconds);

}  // namespace loadwatch::analysis
