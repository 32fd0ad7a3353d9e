#include "analysis/latency_knee.h"

#include <algorithm>

namespace loadwatch::analysis {

namespace {

/// The earlier points' least-squares line at x, or their mean when the line falls.
double extrapolate(const std::vector<double>& x, const std::vector<double>& y, std::size_t count,
                   double at) {
  double n = static_cast<double>(count), mx = 0, my = 0;
  for (std::size_t i = 0; i < count; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= n;
  my /= n;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < count; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (sxx <= 0 || sxy <= 0) return my;
  return my + sxy / sxx * (at - mx);
}

}  // namespace

std::optional<LatencyKnee> latency_knee(const std::vector<double>& users,
                                        const std::vector<double>& p95_seconds) {
  const std::size_t n = std::min(users.size(), p95_seconds.size());
  for (std::size_t i = kLatencyKneeMinEarlier; i < n; ++i) {
    double expected = extrapolate(users, p95_seconds, i, users[i]);
    double rise = p95_seconds[i] - expected;
    if (rise > kLatencyKneeRise * expected && rise >= kLatencyKneeFloorSeconds) {
      return LatencyKnee{i, p95_seconds[i], expected};
    }
  }
  return std::nullopt;
}

}  // namespace loadwatch::analysis
