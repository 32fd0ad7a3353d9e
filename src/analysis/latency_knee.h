#pragma once
// The latency knee: the first phase whose p95 rises clearly above the curve the earlier phases
// set. "The curve" is a least-squares line through the earlier phases' (users, p95), extended to
// the phase's user count; it takes two earlier phases, so the third phase is the first that can
// be a knee. A falling line (warm-up noise; latency does not drop with load) is replaced by the
// earlier phases' mean. "Clearly above" is more than kLatencyKneeRise above the curve and at
// least kLatencyKneeFloorSeconds.

#include <cstddef>
#include <optional>
#include <vector>

namespace loadwatch::analysis {

inline constexpr double kLatencyKneeRise = 0.25;          // 25 % above the extrapolation
inline constexpr double kLatencyKneeFloorSeconds = 0.001;  // ignore sub-millisecond wobble
inline constexpr std::size_t kLatencyKneeMinEarlier = 2;   // phases that set the curve

struct LatencyKnee {
  std::size_t index = 0;    // into the input points
  double p95_seconds = 0;
  double expected_seconds = 0;  // the earlier phases' curve at this user count
};

/// users strictly increasing, p95 the same length.
std::optional<LatencyKnee> latency_knee(const std::vector<double>& users,
                                        const std::vector<double>& p95_seconds);

}  // namespace loadwatch::analysis
