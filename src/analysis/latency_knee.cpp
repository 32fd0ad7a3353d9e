#include "analysis/latency_knee.h"

#include <algorithm>

namespace loadwatch::analysis {

namespace {

double median(std::vector<double>& v) {
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  return (*mid + *std::max_element(v.begin(), mid)) / 2;
}

/// The Theil–Sen line through points [begin, end) at x = at (see the header).
double extrapolate(const std::vector<double>& x, const std::vector<double>& y, std::size_t begin,
                   std::size_t end, double at) {
  std::vector<double> slopes;
  for (std::size_t j = begin; j < end; ++j) {
    for (std::size_t k = j + 1; k < end; ++k) {
      if (x[k] != x[j]) slopes.push_back((y[k] - y[j]) / (x[k] - x[j]));
    }
  }
  std::vector<double> values(y.begin() + static_cast<std::ptrdiff_t>(begin),
                             y.begin() + static_cast<std::ptrdiff_t>(end));
  double slope = slopes.empty() ? 0 : median(slopes);
  if (slope <= 0) return median(values);
  std::vector<double> intercepts;
  for (std::size_t j = begin; j < end; ++j) intercepts.push_back(y[j] - slope * x[j]);
  return median(intercepts) + slope * at;
}

}  // namespace

std::optional<LatencyKnee> latency_knee(const std::vector<double>& users,
                                        const std::vector<double>& p95_seconds) {
  const std::size_t n = std::min(users.size(), p95_seconds.size());
  for (std::size_t i = kLatencyKneeMinEarlier; i < n; ++i) {
    std::size_t begin = i > kLatencyKneeMaxEarlier ? i - kLatencyKneeMaxEarlier : 0;
    double expected = extrapolate(users, p95_seconds, begin, i, users[i]);
    double rise = p95_seconds[i] - expected;
    if (rise > kLatencyKneeRise * expected && rise >= kLatencyKneeFloorSeconds) {
      return LatencyKnee{i, p95_seconds[i], expected};
    }
  }
  return std::nullopt;
}

}  // namespace loadwatch::analysis
