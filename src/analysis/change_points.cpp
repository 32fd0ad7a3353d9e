#include "analysis/change_points.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace loadwatch::analysis {

std::optional<double> value_at(const Series& s, double t) {
  auto it = std::upper_bound(s.t.begin(), s.t.end(), t);
  if (it == s.t.begin()) return std::nullopt;
  return s.v[static_cast<std::size_t>(it - s.t.begin()) - 1];
}

std::vector<ChangePoint> change_points(const Series& counter, const Series* age,
                                       const Series* age_uncertainty) {
  std::vector<ChangePoint> out;
  for (std::size_t i = 1; i < counter.t.size(); ++i) {
    if (counter.v[i] == counter.v[i - 1] || std::isnan(counter.v[i])) continue;
    ChangePoint c;
    c.index = i;
    c.sample_time = counter.t[i];
    c.value = counter.v[i];
    // Only an age sampled with this very value says how old it is.
    std::optional<double> a;
    if (age && !age->empty()) {
      auto it = std::lower_bound(age->t.begin(), age->t.end(), counter.t[i]);
      if (it != age->t.end() && *it == counter.t[i]) a = age->v[it - age->t.begin()];
    }
    // A negative age is no error: on a busy host the sample is assembled after its moment,
    // and figures that arrived in between are younger than it; t - age is their moment still.
    if (a && std::isfinite(*a)) {
      double u = age_uncertainty ? value_at(*age_uncertainty, counter.t[i]).value_or(0) : 0;
      if (!(u >= 0) || !std::isfinite(u)) u = 0;
      c.latest = counter.t[i] - *a;
      c.earliest = c.latest - u;
    } else {
      c.earliest = counter.t[i - 1];
      c.latest = counter.t[i];
    }
    out.push_back(c);
  }
  return out;
}

std::optional<double> RateEstimate::relative_uncertainty() const {
  if (!value || !low || !high || *value <= 0) return std::nullopt;
  return (*high - *low) / 2 / *value;
}

std::string fmt_uncertainty(double relative) {
  char buf[32];
  double pct = relative * 100;
  std::snprintf(buf, sizeof buf, pct < 10 ? "±%.1f %%" : "±%.0f %%", pct);
  return buf;
}

namespace {

std::string updates_text(std::size_t n, double seconds) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%zu counter update%s in %.0f s", n, n == 1 ? "" : "s", seconds);
  return buf;
}

}  // namespace

RateEstimate change_point_rate(const std::vector<ChangePoint>& points, double from, double to) {
  RateEstimate r;
  r.window_seconds = std::max(0.0, to - from);
  std::vector<const ChangePoint*> inside;
  for (const ChangePoint& c : points) {
    if (c.at() >= from && c.at() <= to) inside.push_back(&c);
  }
  r.updates = inside.size();
  if (inside.size() < 2) {
    r.unavailable = updates_text(inside.size(), r.window_seconds) + ": a rate needs two";
    return r;
  }
  // Points are in sample order; the moments they describe are in the same order unless the
  // generator's delay jumped, so take the earliest and the latest moment.
  auto [lo, hi] = std::minmax_element(
      inside.begin(), inside.end(),
      [](const ChangePoint* a, const ChangePoint* b) { return a->at() < b->at(); });
  const ChangePoint& first = **lo;
  const ChangePoint& last = **hi;
  r.first = first;
  r.last = last;
  if (first.index >= last.index) {
    r.unavailable =
        updates_text(inside.size(), r.window_seconds) + ": their times are out of order";
    return r;
  }
  double span = last.at() - first.at();
  double shortest = last.earliest - first.latest;
  double longest = last.latest - first.earliest;
  // The rise adds up every change between the two, so a restart counts from zero.
  double rise = 0, before = first.value;
  for (const ChangePoint& c : points) {
    if (c.index <= first.index || c.index > last.index) continue;
    rise += c.value >= before ? c.value - before : c.value;
    before = c.value;
  }
  if (span <= 0 || shortest <= 0) {
    r.unavailable = updates_text(inside.size(), r.window_seconds) +
                    ": their times are not known well enough for a rate";
    return r;
  }
  double value = rise / span, low = rise / longest, high = rise / shortest;
  double rel = value > 0 ? (high - low) / 2 / value : 0;
  if (rel > kMaxRateUncertainty) {
    r.unavailable = updates_text(inside.size(), r.window_seconds) + ": " + fmt_uncertainty(rel);
    return r;
  }
  r.value = value;
  r.low = low;
  r.high = high;
  return r;
}

}  // namespace loadwatch::analysis
