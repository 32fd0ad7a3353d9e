#include "analysis/kneedle.h"

#include <algorithm>

namespace loadwatch::analysis {

KneedleResult kneedle(const std::vector<double>& x, const std::vector<double>& y,
                      const KneedleOptions& options) {
  KneedleResult result;
  const std::size_t n = std::min(x.size(), y.size());
  if (n < 3) return result;
  const auto [xmin, xmax] = std::minmax_element(x.begin(), x.begin() + n);
  const auto [ymin, ymax] = std::minmax_element(y.begin(), y.begin() + n);
  const double xspan = *xmax - *xmin, yspan = *ymax - *ymin;
  if (xspan <= 0 || yspan <= 0) return result;

  // Normalise both axes to [0, 1]; for a concave increasing curve the knee is where y_n - x_n
  // peaks (the point farthest above the line joining the ends).
  std::vector<double> xn(n), d(n);
  for (std::size_t i = 0; i < n; ++i) {
    xn[i] = (x[i] - *xmin) / xspan;
    d[i] = (y[i] - *ymin) / yspan - xn[i];
  }
  result.difference = d;

  double mean_step = (xn[n - 1] - xn[0]) / static_cast<double>(n - 1);
  auto is_max = [&](std::size_t i) { return d[i] > d[i - 1] && d[i] >= d[i + 1]; };
  auto is_min = [&](std::size_t i) { return d[i] < d[i - 1] && d[i] <= d[i + 1]; };

  // Scan as the paper does: each local maximum sets a threshold S mean steps below it; falling
  // under the threshold before the next local maximum makes that maximum a knee, while reaching
  // a local minimum first resets the threshold to 0.
  std::optional<double> threshold;
  std::size_t candidate = 0;
  for (std::size_t i = 1; i + 1 < n; ++i) {
    if (is_max(i)) {
      threshold = d[i] - options.sensitivity * mean_step;
      candidate = i;
    } else if (threshold && is_min(i)) {
      threshold = 0.0;
    }
    if (threshold && d[i + 1] < *threshold) {
      if (result.all_knees.empty() || result.all_knees.back() != candidate) {
        result.all_knees.push_back(candidate);
      }
      threshold.reset();  // wait for the next local maximum
      if (!options.online) break;
    }
  }
  // Offline stopped at the first knee; online ran on, and the last knee stands.
  if (!result.all_knees.empty()) result.knee = result.all_knees.back();
  return result;
}

}  // namespace loadwatch::analysis
