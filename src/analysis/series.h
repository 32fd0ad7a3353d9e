#pragma once
// A time series as the history or a Prometheus query_range hands it over (one point per sample),
// and the reductions a phase needs over a time window. Windows are closed: [from, to].

#include <optional>
#include <vector>

namespace loadwatch::analysis {

struct Series {
  std::vector<double> t;  // unix seconds, ascending
  std::vector<double> v;  // same length as t

  bool empty() const { return t.empty(); }
  void add(double time, double value) {
    t.push_back(time);
    v.push_back(value);
  }
};

/// Index range [begin, end) of the points inside [from, to].
struct PointRange {
  std::size_t begin = 0, end = 0;
  std::size_t size() const { return end - begin; }
};
PointRange points_in(const Series& s, double from, double to);

std::optional<double> mean_in(const Series& s, double from, double to);
std::optional<double> max_in(const Series& s, double from, double to);
std::optional<double> min_in(const Series& s, double from, double to);
std::optional<double> median_in(const Series& s, double from, double to);
std::optional<double> first_in(const Series& s, double from, double to);
std::optional<double> last_in(const Series& s, double from, double to);
/// Least-squares slope (value per second) of the points in the window; needs two distinct times.
std::optional<double> slope_in(const Series& s, double from, double to);

/// How much a counter rose inside the window, counting a drop as a reset to zero (as Prometheus'
/// increase() does, without extrapolation); needs two points.
std::optional<double> increase_in(const Series& s, double from, double to);
/// increase_in divided by the time between the first and last point used.
std::optional<double> rate_in(const Series& s, double from, double to);

/// A counter as per-second rates between consecutive points, each stamped at the later point;
/// an interval where the counter dropped (a restart) is left out.
Series per_second(const Series& counter);

}  // namespace loadwatch::analysis
