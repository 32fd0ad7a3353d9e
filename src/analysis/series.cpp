#include "analysis/series.h"

#include <algorithm>

namespace loadwatch::analysis {

PointRange points_in(const Series& s, double from, double to) {
  auto lo = std::lower_bound(s.t.begin(), s.t.end(), from);
  auto hi = std::upper_bound(lo, s.t.end(), to);
  return {static_cast<std::size_t>(lo - s.t.begin()), static_cast<std::size_t>(hi - s.t.begin())};
}

std::optional<double> mean_in(const Series& s, double from, double to) {
  PointRange r = points_in(s, from, to);
  if (r.size() == 0) return std::nullopt;
  double sum = 0;
  for (std::size_t i = r.begin; i < r.end; ++i) sum += s.v[i];
  return sum / static_cast<double>(r.size());
}

std::optional<double> max_in(const Series& s, double from, double to) {
  PointRange r = points_in(s, from, to);
  if (r.size() == 0) return std::nullopt;
  return *std::max_element(s.v.begin() + r.begin, s.v.begin() + r.end);
}

std::optional<double> min_in(const Series& s, double from, double to) {
  PointRange r = points_in(s, from, to);
  if (r.size() == 0) return std::nullopt;
  return *std::min_element(s.v.begin() + r.begin, s.v.begin() + r.end);
}

std::optional<double> median_in(const Series& s, double from, double to) {
  PointRange r = points_in(s, from, to);
  if (r.size() == 0) return std::nullopt;
  std::vector<double> values(s.v.begin() + r.begin, s.v.begin() + r.end);
  auto mid = values.begin() + values.size() / 2;
  std::nth_element(values.begin(), mid, values.end());
  if (values.size() % 2 == 1) return *mid;
  double upper = *mid;
  double lower = *std::max_element(values.begin(), mid);
  return (lower + upper) / 2;
}

std::optional<double> first_in(const Series& s, double from, double to) {
  PointRange r = points_in(s, from, to);
  if (r.size() == 0) return std::nullopt;
  return s.v[r.begin];
}

std::optional<double> last_in(const Series& s, double from, double to) {
  PointRange r = points_in(s, from, to);
  if (r.size() == 0) return std::nullopt;
  return s.v[r.end - 1];
}

std::optional<double> slope_in(const Series& s, double from, double to) {
  PointRange r = points_in(s, from, to);
  if (r.size() < 2) return std::nullopt;
  // Centred sums keep the precision: unix times are ~1.7e9 while the window is minutes.
  double n = static_cast<double>(r.size());
  double t0 = s.t[r.begin];
  double mean_t = 0, mean_v = 0;
  for (std::size_t i = r.begin; i < r.end; ++i) {
    mean_t += s.t[i] - t0;
    mean_v += s.v[i];
  }
  mean_t /= n;
  mean_v /= n;
  double stt = 0, stv = 0;
  for (std::size_t i = r.begin; i < r.end; ++i) {
    double dt = s.t[i] - t0 - mean_t;
    stt += dt * dt;
    stv += dt * (s.v[i] - mean_v);
  }
  if (stt <= 0) return std::nullopt;
  return stv / stt;
}

std::optional<double> increase_in(const Series& s, double from, double to) {
  PointRange r = points_in(s, from, to);
  if (r.size() < 2) return std::nullopt;
  double rise = 0;
  for (std::size_t i = r.begin + 1; i < r.end; ++i) {
    double d = s.v[i] - s.v[i - 1];
    rise += d >= 0 ? d : s.v[i];  // a drop is a restart of the counter from zero
  }
  return rise;
}

std::optional<double> rate_in(const Series& s, double from, double to) {
  PointRange r = points_in(s, from, to);
  if (r.size() < 2) return std::nullopt;
  double span = s.t[r.end - 1] - s.t[r.begin];
  if (span <= 0) return std::nullopt;
  return *increase_in(s, from, to) / span;
}

Series per_second(const Series& counter) {
  Series out;
  for (std::size_t i = 1; i < counter.t.size(); ++i) {
    double dt = counter.t[i] - counter.t[i - 1];
    double dv = counter.v[i] - counter.v[i - 1];
    if (dt > 0 && dv >= 0) out.add(counter.t[i], dv / dt);
  }
  return out;
}

}  // namespace loadwatch::analysis
