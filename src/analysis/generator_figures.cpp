#include "analysis/generator_figures.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "analysis/change_points.h"
#include "analysis/histogram_quantile.h"

namespace loadwatch::analysis {

namespace {

/// One source's rate over the window, and the change points it spans.
struct SourceRate {
  const GeneratorSourceSeries* source = nullptr;
  RateEstimate rate;
  bool timed_by_age = false;
  double age_uncertainty = 0;          // the largest at the two ends
  bool reaches_before_stable = false;  // its first change lies before the stable window
};

/// Steps of the wall clock counted between the samples at t0 and t1 (0 when not recorded).
double clock_steps_between(const Series& steps, double t0, double t1) {
  auto before = value_at(steps, t0), after = value_at(steps, t1);
  return before && after && *after > *before ? *after - *before : 0;
}

/// The rate over the stable window [from, to] of a phase that began at `start`.
SourceRate source_rate(const GeneratorSourceSeries& s, double start, double from, double to,
                       std::optional<std::int64_t> users, const Series& clock_steps) {
  SourceRate r;
  r.source = &s;
  bool ages = !s.data_age_seconds.empty();
  auto points = change_points(s.requests, ages ? &s.data_age_seconds : nullptr,
                              ages ? &s.data_age_uncertainty_seconds : nullptr);
  // The phase's users as the generator counts them, seen in the window: else its user count
  // means something else (a phase declared through the API) and says nothing here.
  PointRange seen = points_in(s.users, from, to);
  bool same_users =
      users && std::any_of(s.users.v.begin() + seen.begin, s.users.v.begin() + seen.end,
                           [&](double u) { return std::llround(u) == *users; });
  if (same_users) {
    // A count that arrived with another user count describes the step before or after.
    std::erase_if(points, [&](const ChangePoint& c) {
      auto u = value_at(s.users, c.sample_time);
      return u && std::llround(*u) != *users;
    });
  }
  r.rate = change_point_rate(points, from, to);
  if (same_users && !r.rate.value && r.rate.updates < 2) {
    // A source updated every few seconds may change only once in a short stable window. Every
    // change left now arrived with the phase's own user count, so the last one before the
    // window is in the phase too: the rate spans from there (stated in its window and method).
    const ChangePoint* before = nullptr;
    for (const ChangePoint& c : points) {
      if (c.at() >= start && c.at() < from) before = &c;
    }
    if (before) {
      RateEstimate wider = change_point_rate(points, before->at(), to);
      if (wider.value) {
        r.rate = wider;
        r.reaches_before_stable = true;
      }
    }
  }
  if (r.rate.value) {
    // Its window's length comes from the sample times: a step between them is in it.
    double steps =
        clock_steps_between(clock_steps, r.rate.first->sample_time, r.rate.last->sample_time);
    if (steps > 0) {
      r.rate.value.reset();
      r.rate.low.reset();
      r.rate.high.reset();
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "loadwatch's wall clock was set %.0f time(s) between the rate's two counter "
                    "changes (loadwatch_clock_steps_total): the window's length is off by the "
                    "step",
                    steps);
      r.rate.unavailable = buf;
    }
  }
  if (r.rate.first && r.rate.last) {
    // An end timed by the sample spacing instead (its age was missing) makes it "spacing".
    auto by_age = [&](const ChangePoint& c) {
      return c.index > 0 && c.earliest != s.requests.t[c.index - 1];
    };
    r.timed_by_age = ages && by_age(*r.rate.first) && by_age(*r.rate.last);
    r.age_uncertainty = std::max(r.rate.first->latest - r.rate.first->earliest,
                                 r.rate.last->latest - r.rate.last->earliest);
  }
  return r;
}

std::string seconds_text(double s) {
  char buf[32];
  if (s < 0.001) {
    std::snprintf(buf, sizeof buf, "%.0f us", s * 1e6);  // the Locust listener's 1 us
  } else {
    std::snprintf(buf, sizeof buf, s < 0.1 ? "%.3f s" : "%.1f s", s);
  }
  return buf;
}

std::string method_text(const std::vector<SourceRate>& rates) {
  bool before = std::any_of(rates.begin(), rates.end(),
                            [](const SourceRate& r) { return r.reaches_before_stable; });
  bool all_age =
      std::all_of(rates.begin(), rates.end(), [](const SourceRate& r) { return r.timed_by_age; });
  double widest = 0;
  for (const SourceRate& r : rates) widest = std::max(widest, r.age_uncertainty);
  std::string how =
      all_age ? "each timed by the generator's data age (within " + seconds_text(widest) + ")"
              : "each known to lie between two samples (" + seconds_text(widest) +
                    " apart; no data age)";
  if (before) {
    return "counter rise between its last change before the stable window (with the phase's "
           "user count: the window held one change) and its last change in it, " +
           how;
  }
  return "counter rise between its first and last change in the stable window, " + how;
}

/// The merged histogram between each source's two change points; empty when a source has none
/// or the bucket edges differ.
std::vector<HistogramBucket> merged_histogram(const std::vector<SourceRate>& rates) {
  std::map<double, double> merged;
  std::size_t edges = 0;
  for (const SourceRate& r : rates) {
    const auto& buckets = r.source->duration_buckets;
    if (buckets.empty()) return {};
    if (edges == 0) edges = buckets.size();
    if (buckets.size() != edges) return {};
    double t0 = r.rate.first->sample_time, t1 = r.rate.last->sample_time;
    for (const auto& [le, counter] : buckets) {
      auto a = value_at(counter, t0), b = value_at(counter, t1);
      if (!a || !b || *b < *a) return {};  // missing, or a restart in between
      merged[le] += *b - *a;
    }
  }
  if (merged.size() != edges) return {};
  std::vector<HistogramBucket> out;
  for (const auto& [le, count] : merged) out.push_back({le, count});
  return out;
}

void histogram_latency(PhaseStats& p, const std::vector<HistogramBucket>& buckets) {
  struct Q {
    double q;
    std::optional<double> PhaseStats::*value;
    std::optional<double> PhaseStats::*low;
    std::optional<double> PhaseStats::*high;
  };
  const Q qs[] = {
      {0.5, &PhaseStats::p50_seconds, &PhaseStats::p50_low_seconds, &PhaseStats::p50_high_seconds},
      {0.95, &PhaseStats::p95_seconds, &PhaseStats::p95_low_seconds, &PhaseStats::p95_high_seconds},
      {0.99, &PhaseStats::p99_seconds, &PhaseStats::p99_low_seconds, &PhaseStats::p99_high_seconds},
  };
  for (const Q& q : qs) {
    if (auto e = histogram_quantile(q.q, buckets)) {
      p.*q.value = e->value;
      p.*q.low = e->low;
      p.*q.high = e->high;
    }
  }
}

}  // namespace

void summarize_generator(PhaseStats& p, const GeneratorSeries& g, double from, double to) {
  std::vector<GeneratorSourceSeries> fallback;
  const std::vector<GeneratorSourceSeries>* sources = &g.sources;
  if (sources->empty() && !g.requests.empty()) {
    fallback.push_back({"", g.requests, g.failures, {}, {}, {}, {}});
    sources = &fallback;
  }

  std::vector<SourceRate> rates;
  for (const GeneratorSourceSeries& s : *sources) {
    if (s.requests.empty()) continue;
    rates.push_back(source_rate(s, p.start.value_or(from), from, to, p.users, g.clock_steps));
    const RateEstimate& r = rates.back().rate;
    if (!r.value && p.rps_unavailable.empty()) {
      p.rps_unavailable = (sources->size() > 1 ? s.name + ": " : std::string()) + r.unavailable;
    }
  }
  if (rates.empty()) {
    // No request counter: the generator's own req/s figure, which carries no bound.
    p.rps = mean_in(g.rps, from, to);
    if (p.rps) p.rps_method = "the generator's own req/s figure, mean over the stable window";
  } else if (p.rps_unavailable.empty()) {
    double value = 0, low = 0, high = 0, requests = 0, failures = 0;
    bool have_failures = true;
    for (const SourceRate& r : rates) {
      value += *r.rate.value;
      low += *r.rate.low;
      high += *r.rate.high;
      double t0 = r.rate.first->sample_time, t1 = r.rate.last->sample_time;
      requests += *value_at(r.source->requests, t1) - *value_at(r.source->requests, t0);
      auto f0 = value_at(r.source->failures, t0), f1 = value_at(r.source->failures, t1);
      if (f0 && f1 && *f1 >= *f0)
        failures += *f1 - *f0;
      else
        have_failures = false;
      double start = r.rate.first->at(), end = r.rate.last->at();
      p.rps_window_start = std::min(p.rps_window_start.value_or(start), start);
      p.rps_window_end = std::max(p.rps_window_end.value_or(end), end);
    }
    p.rps = value;
    p.rps_low = low;
    p.rps_high = high;
    p.rps_method = method_text(rates);
    if (have_failures && requests > 0) p.error_ratio = std::clamp(failures / requests, 0.0, 1.0);
    std::vector<HistogramBucket> buckets = merged_histogram(rates);
    if (!buckets.empty()) {
      histogram_latency(p, buckets);
      if (p.p50_seconds || p.p95_seconds || p.p99_seconds) {
        p.latency_method = "histogram";
        p.latency_window =
            "merged histogram buckets between the same two counter changes as req/s, "
            "interpolated in the bucket (bound: the bucket's edges)";
        return;
      }
    }
  }
  const bool histograms = std::any_of(rates.begin(), rates.end(), [](const SourceRate& r) {
    return !r.source->duration_buckets.empty();
  });
  // The generator's figure covers its own window (Locust: its last 10 s), not the stable
  // window: how far it moved over the stable window is its bound there.
  auto rolling = [&](const Series& s, std::optional<double>& value, std::optional<double>& low,
                     std::optional<double>& high) {
    value = median_in(s, from, to);
    low = min_in(s, from, to);
    high = max_in(s, from, to);
    if (!low || !high || *low >= *high) low = high = std::nullopt;
  };
  rolling(g.p50_seconds, p.p50_seconds, p.p50_low_seconds, p.p50_high_seconds);
  rolling(g.p95_seconds, p.p95_seconds, p.p95_low_seconds, p.p95_high_seconds);
  rolling(g.p99_seconds, p.p99_seconds, p.p99_low_seconds, p.p99_high_seconds);
  if (p.p50_seconds || p.p95_seconds || p.p99_seconds) {
    p.latency_method = "generator";
    p.latency_window = (g.latency_window.empty() ? std::string("the generator's own quantiles")
                                                 : g.latency_window) +
                       ", median of its samples over the stable window (bound: their range)";
  } else if (histograms) {
    // The histogram is read between the rate's two counter changes: without a rate, no window.
    p.latency_unavailable =
        !p.rps_unavailable.empty()
            ? "the latency histogram is read between the same two counter changes as req/s, "
              "and there are none: " +
                  p.rps_unavailable
            : "the latency histograms cannot be merged over the window (different bucket edges, "
              "or a counter restart between its two changes)";
  } else if (!rates.empty() || p.rps) {
    p.latency_unavailable = "the generator reported no latency quantile in the stable window";
  }
}

}  // namespace loadwatch::analysis
