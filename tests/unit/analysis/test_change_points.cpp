// Rates from the moments a generator's counter changed, on synthetic runs that behave like the
// setups the report meets: Locust's /stats/requests scraped every 5 s (its web UI caches that
// answer for 2 s), a push without timestamps, and the Locust listener's 1 s pushes.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "analysis/change_points.h"
#include "analysis/compare.h"
#include "analysis/generator_figures.h"
#include "analysis/histogram_quantile.h"
#include "analysis/phase_summary.h"

using namespace loadwatch::analysis;

namespace {

constexpr double kT0 = 1700000000;

/// Requests per second of a step load: `step` seconds per rate.
struct StepLoad {
  std::vector<double> rates;
  double step = 15;

  double rate_at(double t) const {
    auto i = static_cast<std::size_t>(std::max(0.0, t) / step);
    return rates[std::min(i, rates.size() - 1)];
  }
  /// Requests done by time t (seconds since kT0), exactly.
  double count(double t) const {
    double n = 0;
    for (std::size_t i = 0; i < rates.size() && t > i * step; ++i) {
      n += rates[i] * (std::min(t, (i + 1) * step) - i * step);
    }
    return n;
  }
  double end() const { return step * static_cast<double>(rates.size()); }
};

/// What loadwatch's history holds for a Locust source scraped every `interval` seconds: each 1 s
/// sample shows the last scrape's answer, which Locust computed up to `cache` seconds before
/// the scrape. The age series is the contract's (time since the scrape's answer arrived).
struct Observed {
  Series requests, age, age_uncertainty;
};

Observed locust_scrape(const StepLoad& load, double interval, double cache, bool floor_counts,
                       unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> staleness(0, cache);
  std::uniform_real_distribution<double> phase(0, interval);
  Observed o;
  double next_scrape = phase(rng), answer = 0, arrived = -1, described = 0;
  for (double t = 0; t <= load.end() + 5; t += 1) {
    while (next_scrape <= t) {
      // A cached answer is never older than the one before it.
      described = std::max(described, next_scrape - staleness(rng));
      answer = load.count(described);
      if (floor_counts) answer = std::floor(answer);
      arrived = next_scrape;
      next_scrape += interval;
    }
    if (arrived < 0) continue;
    o.requests.add(kT0 + t, answer);
    o.age.add(kT0 + t, t - arrived);
    o.age_uncertainty.add(kT0 + t, cache);
  }
  return o;
}

/// The stable window of step i under the default warm-up rule.
std::pair<double, double> stable_window(const StepLoad& load, std::size_t i) {
  double start = load.step * static_cast<double>(i), end = start + load.step;
  return {kT0 + start + WarmupRule{}.warmup_seconds(load.step), kT0 + end};
}

}  // namespace

TEST_CASE("change points: each sample where the counter moved, timed by its age or spacing") {
  Series c, age, unc;
  for (double t = 0; t < 6; ++t) {
    c.add(kT0 + t, t < 2 ? 10 : t < 5 ? 20 : 30);
    age.add(kT0 + t, 0.5);
    unc.add(kT0 + t, 2);
  }
  auto by_spacing = change_points(c);
  REQUIRE(by_spacing.size() == 2);
  CHECK(by_spacing[0].earliest == kT0 + 1);
  CHECK(by_spacing[0].latest == kT0 + 2);
  CHECK(by_spacing[1].value == 30);
  auto by_age = change_points(c, &age, &unc);
  REQUIRE(by_age.size() == 2);
  CHECK(by_age[0].latest == Approx(kT0 + 1.5));
  CHECK(by_age[0].earliest == Approx(kT0 - 0.5));
}

TEST_CASE("too few counter updates: unavailable with the reason, never 0") {
  std::vector<ChangePoint> one = {{5, kT0 + 5, 100, kT0 + 4, kT0 + 5}};
  RateEstimate r = change_point_rate(one, kT0, kT0 + 7);
  CHECK_FALSE(r.value);
  CHECK(r.updates == 1);
  CHECK(r.unavailable == "1 counter update in 7 s: a rate needs two");
  // Two updates 3 s apart whose times are each known within 2 s: far too coarse.
  std::vector<ChangePoint> two = {{2, kT0 + 2, 100, kT0, kT0 + 2},
                                  {5, kT0 + 5, 400, kT0 + 3, kT0 + 5}};
  r = change_point_rate(two, kT0, kT0 + 7);
  CHECK_FALSE(r.value);
  CHECK(r.unavailable.find("2 counter updates in 7 s") == 0);
}

TEST_CASE("Locust scraped every 5 s: the old rate errs, the change-point bound holds the truth") {
  StepLoad load{{50, 100, 200, 400, 400, 400}, 15};
  double worst_old_error = 0;
  int available = 0, phases = 0;
  for (unsigned seed = 1; seed <= 20; ++seed) {
    Observed o = locust_scrape(load, 5, 2, true, seed);
    auto points = change_points(o.requests, &o.age, &o.age_uncertainty);
    for (std::size_t i = 0; i < load.rates.size(); ++i) {
      auto [from, to] = stable_window(load, i);
      double truth = load.rates[i];
      ++phases;
      if (auto old = rate_in(o.requests, from, to)) {
        worst_old_error = std::max(worst_old_error, std::fabs(*old - truth) / truth);
      } else {
        worst_old_error = 1;
      }
      RateEstimate r = change_point_rate(points, from, to);
      if (!r.value) {
        CHECK_FALSE(r.unavailable.empty());
        continue;
      }
      ++available;
      INFO("seed " << seed << " phase " << i << ": " << *r.low << " .. " << *r.high);
      CHECK(*r.value > 0);
      // Whole requests at each end: the count itself is known within one request.
      double slack = 2 / (r.last->at() - r.first->at());
      CHECK(*r.low - slack <= truth);
      CHECK(truth <= *r.high + slack);
      CHECK(r.first->at() >= from);
      CHECK(r.last->at() <= to);
    }
  }
  // The sample-span rate of the old report is off by tens of percent (the issue measured -18 %
  // to -100 %); the new figure is either bounded around the truth or says why it is missing.
  CHECK(worst_old_error > 0.3);
  CHECK(available > phases / 4);
}

TEST_CASE("Locust scraped every 5 s over 60 s steps: available, within its bound, and tight") {
  StepLoad load{{50, 100, 200}, 60};
  for (unsigned seed = 1; seed <= 10; ++seed) {
    Observed o = locust_scrape(load, 5, 2, false, seed);
    auto points = change_points(o.requests, &o.age, &o.age_uncertainty);
    for (std::size_t i = 0; i < load.rates.size(); ++i) {
      auto [from, to] = stable_window(load, i);
      RateEstimate r = change_point_rate(points, from, to);
      REQUIRE(r.value);
      CHECK(*r.low <= load.rates[i]);
      CHECK(load.rates[i] <= *r.high);
      CHECK(*r.relative_uncertainty() < 0.15);
    }
  }
}

TEST_CASE("a push without timestamps: the spacing bounds a constant delay's rate") {
  // The generator pushes every 2 s; each push arrives 0.3 s after the moment it describes.
  StepLoad load{{120, 240}, 60};
  Series c;
  double last_push = -1, shown = 0;
  for (double t = 0; t <= load.end(); t += 1) {
    double push = std::floor((t - 0.3) / 2) * 2 + 0.3;
    if (push >= 0 && push != last_push) {
      shown = load.count(push - 0.3);
      last_push = push;
    }
    c.add(kT0 + t, shown);
  }
  auto points = change_points(c);
  for (std::size_t i = 0; i < 2; ++i) {
    auto [from, to] = stable_window(load, i);
    RateEstimate r = change_point_rate(points, from, to);
    REQUIRE(r.value);
    CHECK(*r.low <= load.rates[i]);
    CHECK(load.rates[i] <= *r.high);
  }
}

TEST_CASE("the Locust listener's 1 s pushes with its own timestamps: within 3 % on 15 s steps") {
  StepLoad load{{50, 100, 200, 400, 800}, 15};
  Observed o;
  for (double t = 1; t <= load.end(); t += 1) {
    // Pushed at each whole second + 0.4 s; sampled at whole seconds: the age is 0.6 s.
    double stamp = t - 0.6;
    o.requests.add(kT0 + t, std::floor(load.count(stamp)));
    o.age.add(kT0 + t, 0.6);
    o.age_uncertainty.add(kT0 + t, 0.001);
  }
  auto points = change_points(o.requests, &o.age, &o.age_uncertainty);
  for (std::size_t i = 0; i < load.rates.size(); ++i) {
    auto [from, to] = stable_window(load, i);
    RateEstimate r = change_point_rate(points, from, to);
    REQUIRE(r.value);
    CHECK(std::fabs(*r.value - load.rates[i]) / load.rates[i] < 0.03);
    CHECK(*r.relative_uncertainty() < 0.01);
  }
}

TEST_CASE("a count that arrived with another user count is not the phase's") {
  // 8 users at 100 req/s until 50 s, then stopped: the cut requests (5) arrive at 52 s with
  // users = 0, while the phase's end is only seen at 53 s.
  GeneratorSourceSeries s;
  for (double t = 0; t <= 60; t += 1) {
    s.requests.add(kT0 + t, t <= 50 ? 100 * t : t < 52 ? 5000 : 5005);
    s.users.add(kT0 + t, t <= 50 ? 8 : 0);
  }
  GeneratorSeries g;
  g.sources.push_back(s);
  PhaseStats p;
  p.users = 8;
  summarize_generator(p, g, kT0 + 25, kT0 + 53);
  REQUIRE(p.rps);
  CHECK(*p.rps == Approx(100));
  CHECK(*p.rps_window_end <= kT0 + 50);
  // A phase whose user count the generator never reported (declared through the API as 50)
  // keeps every change point.
  PhaseStats declared;
  declared.users = 50;
  summarize_generator(declared, g, kT0 + 25, kT0 + 53);
  REQUIRE(declared.rps);
  CHECK(*declared.rps < 99);
  // Without user counts the drain's change is taken, and the rate says so by being lower.
  g.sources[0].users = {};
  PhaseStats q;
  q.users = 8;
  summarize_generator(q, g, kT0 + 25, kT0 + 53);
  CHECK(*q.rps < 99);
}

TEST_CASE("a counter restart between two change points counts from zero") {
  Series c;
  for (double v : {0.0, 100.0, 200.0, 50.0, 150.0}) c.add(kT0 + c.t.size(), v);
  RateEstimate r = change_point_rate(change_points(c), kT0, kT0 + 10);
  REQUIRE(r.value);
  // 100 (to 200), 50 (restart), 100 (to 150) over the 3 s between the first and last change.
  CHECK(*r.value == Approx(250.0 / 3));
}

TEST_CASE("histogram quantile: interpolated in its bucket as histogram_quantile() does") {
  std::vector<HistogramBucket> b = {{0.1, 10}, {0.2, 60}, {0.5, 100}, {INFINITY, 100}};
  auto p50 = histogram_quantile(0.5, b);
  REQUIRE(p50);
  CHECK(p50->value == Approx(0.18));
  CHECK(p50->low == 0.1);
  CHECK(p50->high == 0.2);
  auto p95 = histogram_quantile(0.95, b);
  REQUIRE(p95);
  CHECK(p95->value == Approx(0.4625));
  CHECK_FALSE(histogram_quantile(0.5, {{0.1, 0}, {INFINITY, 0}}));
  // Beyond the last finite edge there is nothing to bound it with.
  CHECK_FALSE(histogram_quantile(0.99, {{0.1, 10}, {INFINITY, 20}}));
}

TEST_CASE("a phase's quantiles come from the histogram between the rate's change points") {
  // 100 req/s; each second 90 requests take 10-20 ms and 10 take 100-200 ms. The first 60 s ran
  // slower (all 100-200 ms) and must not leak into the second phase's figures.
  GeneratorSourceSeries s;
  s.name = "lc";
  double n = 0, fast = 0, slow = 0;
  for (double t = 0; t <= 120; t += 1) {
    if (t > 0) {
      n += 100;
      if (t <= 60)
        slow += 100;
      else
        fast += 90, slow += 10;
    }
    s.requests.add(kT0 + t, n);
    s.failures.add(kT0 + t, 0);
    s.data_age_seconds.add(kT0 + t, 0.2);
    s.data_age_uncertainty_seconds.add(kT0 + t, 0.001);
    s.duration_buckets[0.01].add(kT0 + t, 0);
    s.duration_buckets[0.02].add(kT0 + t, fast);
    s.duration_buckets[0.1].add(kT0 + t, fast);
    s.duration_buckets[0.2].add(kT0 + t, fast + slow);
    s.duration_buckets[INFINITY].add(kT0 + t, fast + slow);
  }
  GeneratorSeries g;
  g.sources.push_back(s);
  g.p95_seconds.add(kT0 + 100, 0.5);  // a rolling figure that must not be used
  PhaseStats p;
  summarize_generator(p, g, kT0 + 80, kT0 + 120);
  REQUIRE(p.rps);
  CHECK(*p.rps == Approx(100).epsilon(0.01));
  CHECK(*p.rps_low <= 100);
  CHECK(*p.rps_high >= 100);
  CHECK(p.latency_method == "histogram");
  REQUIRE(p.p50_seconds);
  CHECK(*p.p50_seconds > 0.01);
  CHECK(*p.p50_seconds <= 0.02);
  REQUIRE(p.p95_seconds);
  CHECK(*p.p95_low_seconds == 0.1);
  CHECK(*p.p95_high_seconds == 0.2);
  CHECK(*p.p95_seconds == Approx(0.15));  // halfway through the slow 10 %
  CHECK(*p.error_ratio == 0);
}

TEST_CASE("a histogram with no rate in the window gives no quantile, with the reason") {
  // Pushes every 2 s; a 2.5 s window holds one change: no rate, so no span to
  // read the histogram over.
  GeneratorSourceSeries s;
  s.name = "lc";
  for (double t = 0; t <= 20; t += 2) {
    s.requests.add(kT0 + t, 50 * t);
    s.failures.add(kT0 + t, 0);
    s.data_age_seconds.add(kT0 + t, 0);
    s.data_age_uncertainty_seconds.add(kT0 + t, 1e-6);
    s.duration_buckets[0.1].add(kT0 + t, 50 * t);
    s.duration_buckets[INFINITY].add(kT0 + t, 50 * t);
  }
  GeneratorSeries g;
  g.sources.push_back(s);
  PhaseStats p;
  summarize_generator(p, g, kT0 + 9, kT0 + 11.5);
  CHECK_FALSE(p.rps);
  CHECK_FALSE(p.p95_seconds);
  CHECK(p.latency_method.empty());
  CHECK(p.latency_unavailable ==
        "the latency histogram is read between the same two counter changes as req/s, and there "
        "are none: " +
            p.rps_unavailable);
  // With the window holding two changes, the quantiles are there and no reason is given.
  PhaseStats q;
  summarize_generator(q, g, kT0 + 9, kT0 + 15);
  CHECK(q.p95_seconds);
  CHECK(q.latency_unavailable.empty());
  // A generator that reports no latency at all says so (a rate without quantiles).
  GeneratorSeries bare;
  for (double t = 0; t <= 20; t += 1) bare.requests.add(kT0 + t, 10 * t);
  PhaseStats r;
  summarize_generator(r, bare, kT0 + 5, kT0 + 15);
  CHECK(r.rps);
  CHECK(r.latency_unavailable == "the generator reported no latency quantile in the stable window");
}

TEST_CASE("without a histogram the generator's rolling figure is used and labelled") {
  GeneratorSeries g;
  g.latency_window = "the generator's rolling quantile (Locust: its last 10 s)";
  for (double t = 0; t <= 60; t += 1) {
    g.requests.add(kT0 + t, 10 * t);
    g.p95_seconds.add(kT0 + t, 0.05);
  }
  PhaseStats p;
  summarize_generator(p, g, kT0 + 30, kT0 + 60);
  CHECK(*p.rps == Approx(10));
  CHECK(*p.p95_seconds == Approx(0.05));
  CHECK_FALSE(p.p95_low_seconds);
  CHECK(p.latency_method == "generator");
  CHECK(p.latency_window.find("Locust: its last 10 s") != std::string::npos);
}

namespace {

/// A report of `load` as a loadwatch watching Locust at `interval` would write it. The rolling
/// p95 is the same function of time for every watcher (they read one Locust).
CapacityReport watched_report(const StepLoad& load, double interval, unsigned seed) {
  Observed o = locust_scrape(load, interval, 2, true, seed);
  RunSeries run;
  GeneratorSourceSeries src{"lc", o.requests, {}, o.age, o.age_uncertainty, {}, {}};
  for (double t : o.requests.t) {
    src.failures.add(t, 0);
    run.generator.p95_seconds.add(t, 0.02 + 0.0001 * load.rate_at(t - kT0));
  }
  run.generator.sources.push_back(src);
  std::vector<PhaseWindow> phases;
  for (std::size_t i = 0; i < load.rates.size(); ++i) {
    double start = kT0 + load.step * static_cast<double>(i);
    phases.push_back(
        {std::to_string(i + 1), static_cast<std::int64_t>(i + 1), start, start + load.step});
  }
  return report_from_series(std::nullopt, phases, run);
}

}  // namespace

TEST_CASE("two watchers of one run (sources at 1 s and 5 s) pass the documented gate") {
  std::vector<Rule> rules = {parse_rule(Bound::min, "rps=-10%"),
                             parse_rule(Bound::max, "p95=+20%")};
  for (double step : {15.0, 30.0, 60.0}) {
    StepLoad load{{100, 200, 300, 300}, step};
    for (unsigned seed = 1; seed <= 10; ++seed) {
      CapacityReport fine = watched_report(load, 1, seed);
      CapacityReport coarse = watched_report(load, 5, seed + 100);
      for (const auto& [base, cur] : {std::pair{&fine, &coarse}, std::pair{&coarse, &fine}}) {
        Comparison c = compare_reports(*base, *cur, rules);
        INFO("step " << step << " s, seed " << seed);
        CHECK(c.exit_code() == 0);
        CHECK_FALSE(c.regressed());
      }
      for (const PhaseStats& p : coarse.phases)
        CHECK((p.rps ? *p.rps > 0 : !p.rps_unavailable.empty()));
    }
  }
}

TEST_CASE("the same gate still catches a real 30 % drop in throughput") {
  StepLoad base_load{{100, 200, 300}, 60};
  StepLoad slower{{70, 140, 210}, 60};
  std::vector<Rule> rules = {parse_rule(Bound::min, "rps=-10%")};
  for (unsigned seed = 1; seed <= 10; ++seed) {
    Comparison c = compare_reports(watched_report(base_load, 1, seed),
                                   watched_report(slower, 5, seed + 50), rules);
    INFO("seed " << seed);
    CHECK(c.exit_code() == 1);
  }
}

TEST_CASE("a stable window with one change reaches back to the phase's change before it") {
  // Locust's uncached counts scraped every 5 s, 1.5 s past each step: 15 s phases of 10 and
  // 20 req/s; the second phase's stable window [22.5, 30] holds only the scrape at 26.5 s.
  StepLoad load{{10, 20}, 15};
  GeneratorSourceSeries s;
  double arrived = -1;
  for (double t = 0; t <= 31; t += 1) {
    double scrape = std::floor((t - 1.5) / 5) * 5 + 1.5;
    if (scrape < 0) continue;
    arrived = scrape;
    s.requests.add(kT0 + t, load.count(arrived));
    s.users.add(kT0 + t, arrived < 15 ? 1 : 2);
    s.data_age_seconds.add(kT0 + t, t - arrived);
    s.data_age_uncertainty_seconds.add(kT0 + t, 0.005);  // the request's round trip
  }
  GeneratorSeries g;
  g.sources.push_back(s);
  PhaseStats p;
  p.users = 2;
  p.start = kT0 + 15;
  summarize_generator(p, g, kT0 + 22.5, kT0 + 30);
  REQUIRE(p.rps);
  CHECK(*p.rps == Approx(20).epsilon(0.001));
  CHECK(*p.rps_window_start == Approx(kT0 + 21.5 - 0.0025));  // the scrape at 21.5 s
  CHECK(*p.rps_window_start >= *p.start);
  CHECK(p.rps_method.find("before the stable window") != std::string::npos);
  // Not into the step before: a phase starting after that scrape has no rate, with the reason.
  PhaseStats late;
  late.users = 2;
  late.start = kT0 + 22;
  summarize_generator(late, g, kT0 + 22.5, kT0 + 30);
  CHECK_FALSE(late.rps);
  CHECK(late.rps_unavailable.find("1 counter update") != std::string::npos);
  // Nor without the generator's user counts, which are what place the change in the phase.
  g.sources[0].users = {};
  PhaseStats blind;
  blind.users = 2;
  blind.start = kT0 + 15;
  summarize_generator(blind, g, kT0 + 22.5, kT0 + 30);
  CHECK_FALSE(blind.rps);
}

TEST_CASE("a negative age still dates its change: figures that arrived as the sample was taken") {
  // A busy sampler took the sample at 10 s but read the source after its answer of 10.2 s
  // arrived: age -0.2 s. The moment is 10.2 s, not a sample spacing's guess.
  Series counter, age, unc;
  for (double t = 5; t <= 20; t += 1) {
    counter.add(kT0 + t, t < 10 ? 0 : t < 15 ? 100 : 200);
    age.add(kT0 + t, t == 10 ? -0.2 : t == 15 ? 0.1 : t < 15 ? t - 10.2 : t - 14.9);
    unc.add(kT0 + t, 0.005);
  }
  auto points = change_points(counter, &age, &unc);
  REQUIRE(points.size() == 2);
  CHECK(points[0].latest == Approx(kT0 + 10.2));
  CHECK(points[0].earliest == Approx(kT0 + 10.195));
  RateEstimate r = change_point_rate(points, kT0, kT0 + 20);
  REQUIRE(r.value);
  CHECK(*r.value == Approx(100 / 4.7).epsilon(0.01));
}
