#pragma once
// A load generator's counter is known only at the moments loadwatch saw it change: a source
// scraped every 5 s moves in 5 s steps however often loadwatch samples it. A rate taken over the
// samples therefore counts a whole number of steps in a window of arbitrary length (the error
// reaches -100 % when a short window holds none). Here a rate is the counter's rise between two
// change points divided by the time between the moments those values describe, with the bound
// that follows from how well those moments are known. docs/capacity.md gives the figures.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "analysis/series.h"

namespace loadwatch::analysis {

/// Rates whose bound is wider than this (half-width over the value) are unavailable, not shown.
inline constexpr double kMaxRateUncertainty = 0.5;

/// A sample at which the counter differs from the sample before it. The value it shows describes
/// a moment in [earliest, latest].
struct ChangePoint {
  std::size_t index = 0;  // into the counter's samples
  double sample_time = 0;
  double value = 0;
  double earliest = 0, latest = 0;

  double at() const { return (earliest + latest) / 2; }
};

/// The change points of `counter`. With `age` (loadwatch_generator_data_age_seconds, sampled
/// with the counter) a value describes [t - age - uncertainty, t - age]; without it the change
/// happened between the previous sample and this one (the generator's own delay is then taken
/// to be the same at both ends of a window, so it cancels in a rate).
std::vector<ChangePoint> change_points(const Series& counter, const Series* age = nullptr,
                                       const Series* age_uncertainty = nullptr);

struct RateEstimate {
  std::optional<double> value, low, high;  // per second; low <= value <= high
  std::optional<ChangePoint> first, last;  // the change points the rate spans
  std::size_t updates = 0;                 // change points inside the window
  double window_seconds = 0;               // the window asked for
  std::string unavailable;                 // why there is no value

  /// Half the bound's width over the value, e.g. 0.04 for ±4 %.
  std::optional<double> relative_uncertainty() const;
};

/// The rate between the first and the last change point whose moment lies in [from, to].
/// Fewer than two, or a bound wider than kMaxRateUncertainty, leave it unavailable with the
/// reason ("1 counter update in 7 s").
RateEstimate change_point_rate(const std::vector<ChangePoint>& points, double from, double to);

/// The value of `s` at time t, or the last one before it; nothing when s starts after t.
std::optional<double> value_at(const Series& s, double t);

/// "±4.2 %" for a relative uncertainty of 0.042.
std::string fmt_uncertainty(double relative);

}  // namespace loadwatch::analysis
